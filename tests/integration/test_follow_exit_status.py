"""`podtax campaign status --follow` (and `campaign submit --follow`, which ends in it) exits 0 only when every
run succeeded (or was cancelled), 3 with a summary line when any run failed: it exited 0 after every run had
failed. Real nats-server, runner, host agent running real sysbench, parser and analyzer, the real CLI."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from podtax.cli.main import main as cli

from tests.integration.harness import services

NODE = "n1"


def spec(name: str, run_s: int, timeout_s: int) -> str:
    # a run longer than its timeout is bounded by its events too (10^9, never reached): a campaign whose runs last
    # as long as their timeout whatever happens is refused at submit (campaign._runs_end_before_timeout)
    events = 0 if run_s < timeout_s else 1_000_000_000
    return f"""name: {name}
nodes: [{NODE}]
environments: [host]
tests:
  - test: sysbench-cpu
    params: {{threads: 1, max_prime: 2000, events: {events}, time: {run_s}}}
repetitions: {{min: 2, max: 2}}
timeout: {timeout_s}
"""


@pytest.mark.parametrize(("name", "run_s", "timeout_s", "code", "line"), [
    ("ok", 1, 30, 0, None),
    ("slow", 20, 1, 3, "error: campaign slow finished with 2 failed run(s) (exit status 3)"),
])
async def test_follow_exits_non_zero_when_runs_failed(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        name: str, run_s: int, timeout_s: int, code: int, line: str | None) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    (tmp_path / "c.yaml").write_text(spec(name, run_s, timeout_s))
    async with services(nats_url, tmp_path) as s:
        await s.campaign_stack(NODE)
        assert await asyncio.to_thread(cli, ["campaign", "submit", str(tmp_path / "c.yaml")]) == 0
        assert await asyncio.to_thread(cli, ["campaign", "status", name, "--follow", "--timeout", "120"]) == code
    out = capsys.readouterr()
    assert f"campaign {name}: finished" in out.out
    if line:
        assert line in out.err.replace("\n", " ")
    else:
        assert "failed run" not in out.err
