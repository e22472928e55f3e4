"""A host campaign naming a tool the node's host agent reports missing (fault scenario: sysbench absent from the
host's PATH). The agent refuses every such run (tool-missing), and submit took the campaign: every run failed and
`--follow` said only 'campaign x finished with 3 failed run(s) (exit status 3)', the reason in the agent's log.
Now submit refuses it before anything runs, naming the node, the tool and the fix. Real nats-server, runner and
host agent (its PATH without sysbench), the real CLI."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from podtax.cli.main import main as cli

from tests.integration.harness import services

NODE = "n1"
SPEC = f"""name: {{name}}
nodes: [{NODE}]
environments: [host]
tests:
  - test: sysbench-cpu
    params: {{{{threads: 1, max_prime: 2000, events: 100}}}}
repetitions: {{{{min: 3, max: 3}}}}
timeout: 30
"""


@pytest.mark.parametrize(("path", "code"), [("empty", 2), ("system", 0)])
async def test_a_host_campaign_of_a_tool_the_agent_lacks_is_refused_at_submit(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        path: str, code: int) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    if path == "empty":  # the agent's facts are collected from its PATH: no sysbench on it
        (tmp_path / "empty").mkdir()
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    (tmp_path / "c.yaml").write_text(SPEC.format(name=f"tool-{path}"))
    async with services(nats_url, tmp_path) as s:
        await s.campaign_stack(NODE)
        got = await asyncio.to_thread(cli, ["campaign", "submit", str(tmp_path / "c.yaml"), "--skip-analyzer-check"])
    err = " ".join(capsys.readouterr().err.split())
    assert got == code, err
    if code:
        assert "node 'n1': its host agent reports no sysbench installed, so it would refuse every host run of " \
               "sysbench-cpu: install sysbench on that host (e.g. apt-get install sysbench" in err, err
    else:
        assert "reports no" not in err, err
