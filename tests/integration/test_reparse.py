"""`podtax reparse`: results are re-derived from the stored raw logs, without duplicates."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from podtax import events, natsserver
from podtax.bus import Bus
from podtax.cli.main import main as cli

from tests.integration.harness import services, wait_for

CORPUS = Path(__file__).parents[1] / "corpus/debian12-x86_64"


async def test_reparse_rederives_without_duplicates(nats_url: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture) -> None:
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("PODTAX_API_TOKEN", "integration-test-token")  # the analyzer's and the CLI's
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port)
        await s.parser()
        bus = await Bus.connect(nats_url, "test")
        now = events.now()
        logs = {"ok-1": "sysbench-cpu-prime100000-1t.log", "bad-1": "sysbench-bad-arg.log"}
        await bus.publish_many([events.raw_log(events.RawLog(
            run=events.RunSpec(run_id=rid, campaign="rp", node="n", env="host", test="sysbench-cpu",
                               params={"threads": 1, "max_prime": 100000, "events": 200}),
            stdout=(CORPUS / name).read_text(), exit_code=0, started_at=now, ended_at=now), "test")
            for rid, name in logs.items()])
        await wait_for(lambda: s.query("SELECT count(*) FROM runs")[0][0] == 2, 30, "both outcomes")
        # Simulate an older parser's damage: drop a metric and mislabel the failure.
        s.query("DELETE FROM metrics WHERE run_id = 'ok-1' AND name = 'latency_max'")
        s.query("UPDATE runs SET failure_reason = 'old-reason' WHERE run_id = 'bad-1'")
        assert await asyncio.to_thread(cli, ["reparse", "--campaign", "rp"]) == 0
        out = capsys.readouterr().out
        assert "reparsed 2 logs: 1 results, 1 failures, 2 changed" in out
        assert s.query("SELECT count(*), count(DISTINCT run_id) FROM runs") == [(2, 2)]
        assert s.query("SELECT failure_reason FROM runs WHERE run_id = 'bad-1'") != [("old-reason",)]
        assert s.query("SELECT count(*) FROM metrics WHERE run_id = 'ok-1' AND name = 'latency_max'") == [(1,)]
        assert await asyncio.to_thread(cli, ["reparse", "--campaign", "rp"]) == 0
        assert "0 changed" in capsys.readouterr().out
        assert await asyncio.to_thread(cli, ["reparse", "--campaign", "nope"]) != 0
        await bus.close()
