"""`podtax campaign submit` with NATS unreachable, through the real entry point. --dry-run still checks what
needs no NATS (the file, the plan's size on the listed nodes), says in one line that the nodes were not
checked and why, and exits 0 when the rest is fine; the real submit still stops with one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from podtax.cli.main import main

DEAD = "nats://127.0.0.1:9"  # the discard port: nothing listens there
GOOD = {"name": "off", "nodes": ["n1"], "environments": ["host"], "tests": [{"test": "sysbench-cpu"}],
        "repetitions": {"min": 6, "max": 6}}  # fewer: a warning that no verdict is possible
# 2,700 nodes: a small plan, but the runner's header document (spec + a line per node) would pass 512 KiB
HUGE_HEADER = {**GOOD, "nodes": [f"n{i:04}" for i in range(2700)]}


@pytest.fixture(autouse=True)
def _dead_nats(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", DEAD)
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "5")
    monkeypatch.setenv("PODTAX_DATA_DIR", str(tmp_path))


CASES = [  # id, campaign, --dry-run, exit status, fragment of stdout, fragments of the one line on stderr
    ("dry run, good file", GOOD, True, 0,  # the plan's size, as the README promises (it said nothing of it)
     "campaign off is valid, its nodes unchecked: 6 run(s) on 1 node(s) (dry run: nothing submitted)",
     ["warning: the nodes were not checked", f"cannot reach NATS at {DEAD}"]),
    ("dry run, plan too big", HUGE_HEADER, True, 2, "",
     ["error: campaign off's document would take about", "use fewer nodes"]),
    ("real submit", GOOD, False, 1, "", ["error: cannot reach NATS at", DEAD]),
]


@pytest.mark.parametrize(("doc", "dry_run", "code", "out_fragment", "err_fragments"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_submit_without_nats(doc: dict, dry_run: bool, code: int, out_fragment: str, err_fragments: list[str],
                             tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["campaign", "submit", *(["--dry-run"] if dry_run else []), str(path)]) == code
    out, err = capsys.readouterr()
    assert out_fragment in out
    if not out_fragment:
        assert "is valid" not in out
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    for fragment in err_fragments:
        assert fragment in lines[0], err
    assert len(lines) == 1 and lines[0].endswith("; nothing was submitted") == (code == 2), lines
