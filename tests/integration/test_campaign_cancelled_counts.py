"""A cancelled campaign's runs are counted as cancelled, apart from failed ones (a real nats-server, runner, host
agent running real sysbench, parser and analyzer in this process, the real CLI). After `podtax campaign cancel`,
status said "2 done, 22 failed" while cancel said the pending runs were "recorded as cancelled" and the analyzer's
API (and `podtax report`) counted no failed run: cancelled runs never ran, so they are no run.failed."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest

from tests.faults.drill import wait_header
from tests.integration.harness import run_cli, submitted_campaign

NODE = "n1"
REPS = 12
SPEC = f"""name: stopped
nodes: [{NODE}]
environments: [host]
tests:
  - test: sysbench-cpu
    params: {{threads: 1, max_prime: 2000, events: 0, time: 1}}
repetitions: {{min: {REPS}, max: {REPS}}}
timeout: 40  # a 1 s run and at least 30 s for its start-up (campaign: start_slack)
"""


async def test_status_api_and_report_agree_on_failed_runs_after_a_cancel(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    async with submitted_campaign(nats_url, tmp_path, monkeypatch, SPEC, NODE) as campaign:
        bus, port = campaign.bus, campaign.port
        await wait_header(bus, "stopped", lambda h: h["progress"][NODE].get("done", 0) >= 2, 120, "two runs done")
        assert await run_cli("campaign", "cancel", "stopped", "--wait", "20") == 0
        out = capsys.readouterr().out
        said = re.search(r"(\d+) run\(s\) recorded as cancelled; (\d+) still in flight", out)
        assert said and int(said[1]) > 0
        # a run in flight may end done (below): the command says so (it said every one was recorded cancelled)
        assert "a run that ends before it is stopped (a pod run's Job is looked at every 5 s) keeps its result" in \
            " ".join(out.split()), out
        h = await wait_header(bus, "stopped", lambda h: h.get("finished_at"), 60, "the campaign to finish")
        done, cancelled = h["progress"][NODE]["done"], h["progress"][NODE]["cancelled"]
        failed = h["progress"][NODE].get("failed", 0)
        # a run in flight when cancel read the campaign ends done, or killed by its host agent: recorded cancelled then
        assert int(said[1]) <= cancelled <= int(said[1]) + int(said[2]) and done + failed + cancelled == REPS
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            for _ in range(100):  # the analyzer stores the last results a moment later
                info = {c["name"]: c for c in (await http.get("/api/campaigns")).json()}.get("stopped")
                if info and info["runs_ok"] + info["runs_failed"] == done + failed:
                    break
                await asyncio.sleep(0.2)
        assert info and (info["runs_ok"], info["runs_failed"]) == (done, failed)
        assert await run_cli("campaign", "status", "stopped") == 0
        out = capsys.readouterr().out
        assert f"{done} done, {failed} failed, {cancelled} cancelled, 0 left" in out, out
        assert "finished (cancelled)" in out
        assert await run_cli("report", "stopped", "--json") == 0
        report = json.loads(capsys.readouterr().out)
        assert {c["n_host"] for c in report["cells"]} == {done}, "the report counts the runs that ran"
        assert not [w for w in report["warnings"] if " failed " in w], "and, like the API, no failed run"
