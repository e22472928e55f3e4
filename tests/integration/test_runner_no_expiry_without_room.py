"""A host run whose report NATS refuses for want of room other than the events stream's size (review r3 of 997cd71):
its node's log subject at its own limit of messages (max_msgs_per_subject: 'maximum messages per subject exceeded'),
or the server's JetStream storage used up under a stream of no size limit ('insufficient resources'). Before, the
runner looked only at the stream's bytes: the run expired as no-report once its timeout + grace passed and ran again,
and both logs were stored once there was room (two results for one planned run). Now a run due to expire is held
while its node's subjects are at their limit or the server refuses writes for want of room (the campaign's state says
why), and gets its grace again once there is room. A look that gets no answer holds it too, for a bound. And NATS
refusing the runner's own events for one node is written only in the campaigns of that node.
Real nats-server; the runner's tick driven with its clock (no agent: the run's report never comes)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from podtax import events, natsserver, subjects
from podtax.bus import Bus
from podtax.cli.main import main as cli
from podtax_runner import fullness, service
from podtax_runner.service import Runner

from tests.integration.test_runner_own_events_refused import runner_of


def spec(name: str, node: str = "n1") -> dict[str, Any]:
    return {"name": name, "nodes": [node], "environments": ["host"],
            "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 2000, "events": 100, "threads": 1}}],
            "repetitions": {"min": 1, "max": 1}, "timeout": 30, "seed": 1}


GRACE_S = 5.0
LATE = timedelta(seconds=30 + GRACE_S + 60)  # well past the run's timeout + grace


async def dispatched(runner: Runner, name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, datetime]:
    """The campaign's run sent at clock 1,000: its run id and when."""
    start = events.now()
    monkeypatch.setattr(service, "clock", lambda: 1_000.0)
    await runner.tick(start)
    [run] = [s.run for s in runner.campaigns[name].runs.values() if s.status == "dispatched"]
    return run.run_id, start


async def late_tick(runner: Runner, at: datetime, clock: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "clock", lambda: clock)
    await runner.tick(at)


async def use_up_storage(bus: Bus) -> None:
    """Publish filler until the server refuses it for want of storage (10023: its max_file_store reached)."""
    for n in range(1_000):  # no stream limit: the server's storage is used up first
        try:
            await bus.js.publish(f"podtax.filler.{n}", b"x" * 50_000)
        except Exception as exc:  # noqa: BLE001 - the refusal looked for
            assert getattr(exc, "err_code", None) == 10023, exc
            return
    raise AssertionError("2 MB of storage took 50 MB")


@pytest.mark.parametrize("node", ["n1", "node-1.example.internal"])  # a name with dots: its subject token escaped
async def test_a_run_whose_log_subject_is_at_its_limit_does_not_expire(
        nats_url: str, monkeypatch: pytest.MonkeyPatch, node: str) -> None:
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner = await runner_of(bus, spec("subj-full", node),
                                 streams={"max_bytes": 10_000_000, "max_msgs_per_subject": 3},
                                 runner_report_grace_s=GRACE_S)
        run_id, start = await dispatched(runner, "subj-full", monkeypatch)
        log_subject = subjects.join(subjects.RUN_LOG, "host", node)
        for _ in range(3):  # the node's log subject at its limit: the agent's log for this run is refused
            await bus.js.publish(log_subject, b"x")
        await late_tick(runner, start + LATE, 2_000.0, monkeypatch)
        state = runner.campaigns["subj-full"]
        assert state.runs[run_id].status == "dispatched", state.runs[run_id]  # before: failed, no-report
        assert not runner.unreported
        header = await Bus.kv_json(runner.kv, "campaign.subj-full")
        assert f"subject {log_subject} holds its limit of 3 messages" in header["stalled"], header
        await bus.js.purge_stream(subjects.STREAM, subject=log_subject)  # an admin makes room
        await late_tick(runner, start + LATE, 3_000.0, monkeypatch)
        assert state.runs[run_id].status == "dispatched"  # its grace again from the moment there is room
        assert "stalled" not in await Bus.kv_json(runner.kv, "campaign.subj-full")
        await late_tick(runner, start + LATE + timedelta(seconds=GRACE_S + 1), 4_000.0, monkeypatch)
        assert state.runs[run_id].status == "failed" and state.runs[run_id].reason == "no-report"
    finally:
        await bus.close()


async def test_a_run_does_not_expire_while_the_servers_storage_is_used_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "js.conf"
    conf.write_text("jetstream { max_file_store: 2MB }\n")
    server = natsserver.start(tmp_path / "js", config=conf)
    monkeypatch.setenv("PODTAX_NATS_URL", server.url)
    bus = await Bus.connect(server.url, "test/runner")
    try:
        runner = await runner_of(bus, spec("no-storage"), streams={"max_bytes": -1}, runner_report_grace_s=GRACE_S)
        run_id, start = await dispatched(runner, "no-storage", monkeypatch)
        await use_up_storage(bus)
        await late_tick(runner, start + LATE, 2_000.0, monkeypatch)
        state = runner.campaigns["no-storage"]
        assert state.runs[run_id].status == "dispatched", state.runs[run_id]  # before: failed, no-report
        assert not runner.room.full  # the stream itself has no limit
        # said (the campaign's state cannot be written: the runner's bucket is refused too)
        assert "insufficient resources" in runner.room.storage, runner.room.storage
        # so `campaign status` looks itself: before, it said nothing of why the campaign stalls
        stalled = await status_stalled(capsys)
        assert "stalled: NATS refuses writes for want of room (insufficient resources, JetStream error 10023)" \
            in stalled and "max_file_store" in stalled, stalled
        await bus.js.purge_stream(subjects.STREAM, subject="podtax.filler.>")  # room again
        await late_tick(runner, start + LATE, 3_000.0, monkeypatch)
        assert state.runs[run_id].status == "dispatched"  # its grace again from the moment there is room
        assert "stalled" not in await status_stalled(capsys)
        await late_tick(runner, start + LATE + timedelta(seconds=GRACE_S + 1), 4_000.0, monkeypatch)
        assert state.runs[run_id].status == "failed" and state.runs[run_id].reason == "no-report"
    finally:
        await bus.close()
        server.stop()


async def test_a_look_without_answer_holds_a_run_for_a_bound(nats_url: str, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        runner = await runner_of(bus, spec("no-answer"), runner_report_grace_s=GRACE_S)
        run_id, start = await dispatched(runner, "no-answer", monkeypatch)

        async def unanswered(*args: Any, **kwargs: Any) -> Any:
            raise TimeoutError("no answer")

        monkeypatch.setattr(bus.js, "stream_info", unanswered)
        state = runner.campaigns["no-answer"]
        await late_tick(runner, start + LATE, 2_000.0, monkeypatch)
        assert state.runs[run_id].status == "dispatched", state.runs[run_id]  # before: failed, no-report
        assert any("could not look at the room NATS has for reports" in r.getMessage() for r in caplog.records)
        await late_tick(runner, start + LATE, 2_000.0 + fullness.UNKNOWN_HOLD_S - 1, monkeypatch)
        assert state.runs[run_id].status == "dispatched"
        await late_tick(runner, start + LATE, 2_000.0 + fullness.UNKNOWN_HOLD_S + 10, monkeypatch)
        assert state.runs[run_id].status == "failed" and state.runs[run_id].reason == "no-report"  # the bound
    finally:
        await bus.close()


async def test_a_refusal_of_one_nodes_requests_is_written_in_its_campaigns_only(
        nats_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    bus = await Bus.connect(nats_url, "test/runner")
    try:
        await bus.ensure_streams(max_bytes=10_000_000, max_msgs_per_subject=2)
        for _ in range(2):  # node n1's requests subject at its limit: the runner's request for n1 is refused
            await bus.js.publish(subjects.join(subjects.RUN_REQUESTED, "host", "n1"), b"x")
        runner = await runner_of(bus, spec("on-n1"), spec("on-n2", "n2"),
                                 streams={"max_bytes": 10_000_000, "max_msgs_per_subject": 2})
        saves = []
        real = runner.save

        async def counted(state: Any) -> None:
            saves.append(state.name)
            await real(state)

        monkeypatch.setattr(runner, "save", counted)
        monkeypatch.setattr(service, "clock", lambda: 1_000.0)
        for _ in range(5):
            await runner.tick()
        n1 = await Bus.kv_json(runner.kv, "campaign.on-n1")
        n2 = await Bus.kv_json(runner.kv, "campaign.on-n2")
        assert "subject podtax.run.requested.host.n1 holds its limit" in n1["stalled"], n1
        assert "stalled" not in n2, n2  # before: n1's refusal written in every active campaign
        assert saves.count("on-n2") <= 1, saves  # n2's run dispatched, saved once; nothing to write after
    finally:
        await bus.close()


async def status_stalled(capsys: pytest.CaptureFixture[str]) -> str:
    """What `podtax campaign status no-storage` says on stderr (its `stalled:` line), on one line."""
    capsys.readouterr()
    assert await asyncio.to_thread(cli, ["campaign", "status", "no-storage"]) in (0, None)
    return " ".join(capsys.readouterr().err.split())
