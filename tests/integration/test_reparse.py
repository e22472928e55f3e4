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


async def test_reparse_counts_runs_whose_tool_build_or_architecture_alone_changed(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """A run stored by an older analyzer or parser without its tool's architecture or build (tool_arch, tool_build
    NULL) gets them from its log on reparse, its outcome unchanged: the reparse said '0 changed'."""
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("PODTAX_API_TOKEN", "integration-test-token")
    wrapped = "#podtax phase=before tool_version=\"sysbench 1.0.20\" machine=aarch64 tool_arch=arm\n"
    log = (CORPUS / "sysbench-cpu-prime100000-1t.log").read_text()
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port)
        await s.parser()
        bus = await Bus.connect(nats_url, "test")
        now = events.now()
        await bus.publish_many([events.raw_log(events.RawLog(
            run=events.RunSpec(run_id=rid, campaign="rp", node="n", env="kubernetes", test="sysbench-cpu",
                               params={"threads": 1, "max_prime": 100000, "events": 200}),
            stdout=wrapped + log, exit_code=0, started_at=now, ended_at=now), "test") for rid in ("a", "b", "c")])
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE tool_arch = 'arm'")[0][0] == 3, 30,
                       "three outcomes")
        build = s.query("SELECT tool_build FROM runs WHERE run_id = 'a'")[0][0]
        s.query("UPDATE runs SET tool_arch = NULL WHERE run_id = 'a'")  # an analyzer before tool_arch
        s.query("UPDATE runs SET tool_build = 'old build' WHERE run_id = 'b'")  # a parser that read it otherwise
        s.query("UPDATE runs SET failure_reason = 'old-reason', tool_arch = NULL WHERE run_id = 'c'")  # both
        assert await asyncio.to_thread(cli, ["reparse", "--campaign", "rp"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert ("reparsed 3 logs: 3 results, 0 failures, 3 changed (2 only in provenance: the tool's build, version "
                "or architecture, or the pod's limits)") in out
        assert s.query("SELECT run_id, tool_arch, tool_build FROM runs ORDER BY run_id") == [
            (r, "arm", build) for r in ("a", "b", "c")]
        assert await asyncio.to_thread(cli, ["reparse", "--campaign", "rp"]) == 0
        assert "3 results, 0 failures, 0 changed\n" in capsys.readouterr().out
        await bus.close()
