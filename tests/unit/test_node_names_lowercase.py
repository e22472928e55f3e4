"""A node has one spelling everywhere: the lowercase Kubernetes writes (kubelet lowercases the hostname).

`podtax import` kept node names in lowercase, but a campaign file took `nodes: [Node-1]` and the host agent's
PODTAX_AGENT_NODE defaulted to the hostname with its capitals: a host measured as Node-1 never paired with imported
node-1 rows (or with the pods' node-1), and the import's warning "so its runs pair with node-1's" was false. Now the
agent's default is the hostname in lowercase, and a PODTAX_AGENT_NODE, a campaign node or a --node option with
capitals is refused at start (exit 2, one line naming the lowercase spelling to write)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from podtax.cli.main import main
from podtax.config import HostAgentSettings, load

QUICK = (Path(__file__).parents[2] / "examples" / "campaigns" / "quick.yaml").read_text()


def test_the_agents_default_node_is_the_hostname_in_lowercase(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PODTAX_AGENT_NODE", raising=False)
    monkeypatch.setattr(socket, "gethostname", lambda: "Node-1")
    assert load(HostAgentSettings).agent_node == "node-1"


def test_the_agent_refuses_a_node_name_with_capitals(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from podtax_host_agent.__main__ import main as agent_main

    monkeypatch.setenv("PODTAX_AGENT_NODE", "Node-1")
    assert agent_main([]) == 2
    err = capsys.readouterr().err
    assert "PODTAX_AGENT_NODE" in err and "set PODTAX_AGENT_NODE=node-1" in err, err


def test_a_campaign_naming_a_node_with_capitals_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:9")  # never reached: refused before NATS
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    path = tmp_path / "c.yaml"
    assert "nodes: [node-1]" in QUICK
    path.write_text(QUICK.replace("nodes: [node-1]", "nodes: [Node-1]"))
    assert main(["campaign", "submit", "--dry-run", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nodes: node 'Node-1': node names are lowercase" in err[0], err
    assert "write node-1" in err[0], err


@pytest.mark.parametrize("argv", [["nats-auth", "node", "Node-1"], ["nats-auth", "conf", "node-2", "Node-1"]])
def test_a_node_argument_with_capitals_is_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`podtax nats-auth node NAME` printed PODTAX_AGENT_NODE=Node-1, which the agent now refuses (as do --node of
    `podtax up`, `results` and `scores`, through the same check)."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "write node-1" in err[0], err
