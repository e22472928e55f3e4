"""A campaign naming a node no host agent or Kubernetes node can be called ('', 'a/b', '../etc', 'a b', a NUL, a
name of 300 characters): `podtax campaign submit --dry-run` with NATS away said 'campaign quick is valid, its nodes
unchecked' (exit 0), so a file checked offline (CI) passed and was refused only once NATS was there ('unknown
node'). Now the file itself is refused: one line naming the node and the form of a node name, exit 2, before NATS
is asked. Run through podtax's main (the real entry point)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from podtax.cli.main import main

QUICK = (Path(__file__).parents[2] / "examples" / "campaigns" / "quick.yaml").read_text()


@pytest.fixture(autouse=True)
def _dead_nats(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:9")
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    monkeypatch.setenv("PODTAX_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("PODTAX_DATA_DIR", str(tmp_path))


@pytest.mark.parametrize("node", ["", "a/b", "../etc", "a b", "a\x00b", "a" * 300, "-a", "a.", "n1\u202e"])
def test_a_name_no_node_can_have_is_refused_offline(node: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(QUICK.replace("nodes: [node-1]", f"nodes: [{json.dumps(node)}]"))
    assert main(["campaign", "submit", "--dry-run", str(path)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"c.yaml:3: nodes: {node!r} is not a node name" in lines[0], lines


@pytest.mark.parametrize("node", ["node-1", "ip-10-0-0-1.ec2.internal", "n_1", "a" * 253])
def test_node_names_as_kubernetes_writes_them_are_taken(node: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(QUICK.replace("nodes: [node-1]", f"nodes: [{node}]"))
    assert main(["campaign", "submit", "--dry-run", str(path)]) == 0, capsys.readouterr().err
