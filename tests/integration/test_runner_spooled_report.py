"""A report NATS refuses while the server's JetStream storage is used up ('insufficient resources': max_file_store
reached by a stream without a size limit), the runner stopped before an admin makes room. The runner keeps a refused
report in its bucket (outbox.KEPT) so the next runner sends it instead of running the run again; but that write is
refused too then (a bucket's own size limit reserves nothing against another stream's writes), so the copy lived in
memory only and the restart lost it: the run was run again, its first measurement lost. Now, with
PODTAX_RUNNER_SPOOL_DIR, the copy is written there (spool.py), sent by the next runner, and removed once its run is
recorded as reported. Real nats-server with a 2 MB max_file_store."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from podtax import events, natsserver, subjects
from podtax.bus import Bus
from podtax_runner import outbox, spool
from podtax_runner.service import Runner

from tests.integration.test_runner_kept_copies import a_log, keys
from tests.integration.test_runner_no_expiry_without_room import spec, use_up_storage
from tests.integration.test_runner_own_events_refused import runner_of
from tests.integration.test_runner_stream_full_held import wait_for_async


async def test_a_report_refused_with_the_storage_used_up_outlives_a_runner_restart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    conf = tmp_path / "js.conf"
    conf.write_text("jetstream { max_file_store: 2MB }\n")
    server = natsserver.start(tmp_path / "js", config=conf)
    folder = tmp_path / "spool"
    bus = await Bus.connect(server.url, "test/runner")
    try:
        runner = await runner_of(bus, spec("spooled"), streams={"max_bytes": -1}, runner_spool_dir=str(folder))
        await runner.tick()
        [run] = [s.run for s in runner.campaigns["spooled"].runs.values() if s.status == "dispatched"]
        await use_up_storage(bus)
        box = runner.controlplane.outbox
        with caplog.at_level(logging.WARNING):
            sending = asyncio.create_task(box.send(run, a_log(run), "log"))
            await wait_for_async(lambda: asyncio.sleep(0, bool(box.holding().get(run.run_id))), 30, "the refusal")
            box.stop()  # the runner stops before NATS takes it
            assert not await asyncio.wait_for(sending, 30)
        in_bucket = await keys(runner.kv)
        spooled = sorted(p.name for p in folder.iterdir())
        await bus.js.purge_stream(subjects.STREAM, subject="podtax.filler.>")  # an admin makes room
        sent: list[tuple[str, events.Envelope]] = []
        again = Runner(runner.settings, bus, runner.kv, None)
        again.controlplane.resend = lambda r, e: sent.append((r.run_id, e))  # type: ignore[method-assign]
        await again.load()
        assert [rid for rid, _ in sent] == [run.run_id], (sent, in_bucket, spooled)  # before: [] (run again)
        box = again.controlplane.outbox
        assert await box.send(run, sent[0][1], "log", kept=True)
        assert list(folder.iterdir())  # NATS took it: the copy goes only once its run is recorded as reported
        await box.release(run, recorded=True)
        left = sorted(p.name for p in folder.iterdir())
    finally:
        await bus.close()
        server.stop()
    assert in_bucket == [], in_bucket  # the bucket refused it (insufficient resources)
    assert spooled == [spool.file_name(run, runner.campaigns["spooled"].created_at.isoformat())], spooled
    assert left == [], left
    assert any("kept in its spool" in r.getMessage() for r in caplog.records), caplog.text


def test_a_spool_keeps_to_its_size_and_leaves_nothing_half_written(tmp_path: Path) -> None:
    run = events.RunSpec(run_id="sz-0123456789abcdef", campaign="sz", node="n1", env="kubernetes",
                         test="sysbench-cpu", params={})
    other = run.model_copy(update={"run_id": "sz-fedcba9876543210"})
    box = spool.Spool(tmp_path / "s", max_bytes=1_000)
    box.write(run, "a", b"x" * 600)
    box.write(run, "a", b"y" * 700)  # the same copy written again replaces itself
    with pytest.raises(OSError, match="more than 1,000 bytes"):
        box.write(other, "a", b"z" * 400)
    (tmp_path / "s" / ".tmp-crashed").write_bytes(b"half")  # a crash mid-write: not a copy, and removed
    assert [(k, p.read_bytes()) for k, p in box.entries()] == [(outbox.kept_key(run), b"y" * 700)]
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [spool.file_name(run, "a")]
    box.remove(run, "b")  # another submission's copy stays
    assert len(box.entries()) == 1
    box.remove(run, "a")
    assert box.entries() == []
