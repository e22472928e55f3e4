"""A kept copy of a report (outbox.KEPT) whose removal failed once its run was recorded as reported: it stayed in the
runner's bucket until the next runner loaded, and is never sent again as a second result. Now it is removed again at
the next report NATS takes; a runner resuming with it still there removes it unsent; and a report that does reach
the analyzer twice (a runner crashed between NATS taking it and recording it, its copy sent again after JetStream's
de-duplication window) is stored once, by run id. Real nats-server and the analyzer's DuckDB store."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from nats.js.kv import KeyValue
from podtax import events, natsserver
from podtax.bus import Bus
from podtax_analyzer.store import Store
from podtax_runner import outbox
from podtax_runner.spool import Spool, file_name

from tests.integration.test_runner_kept_copies import a_log, keys, resumed, two_runs

log = logging.getLogger("test")


def refuse_deletes(monkeypatch: pytest.MonkeyPatch, refusing: dict[str, bool]) -> None:
    """The removal of a kept copy fails (no answer) while refusing["on"]."""
    real_delete = KeyValue.delete

    async def refused(self: KeyValue, key: str, **kwargs: Any) -> bool:
        if refusing["on"] and key.startswith(f"{outbox.KEPT}."):
            raise TimeoutError("no answer")
        return await real_delete(self, key, **kwargs)

    monkeypatch.setattr(KeyValue, "delete", refused)


async def test_a_copy_whose_removal_failed_goes_at_the_next_report_and_is_never_sent(
        nats_server: natsserver.NatsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    bus = await Bus.connect(nats_server.url, "test")
    refusing = {"on": False}
    refuse_deletes(monkeypatch, refusing)
    try:
        runner, a, b = await two_runs(bus, "ra", "rb")  # a: recorded as reported; b: in flight
        made = runner.campaigns["ra"].created_at.isoformat()
        box = runner.controlplane.outbox
        await runner.kv.put(outbox.kept_key(a.run), outbox.kept_value(a_log(a.run), made))
        box.copies[a.run.run_id] = True  # its copy kept while NATS refused it; NATS took it since
        refusing["on"] = True
        await box.release(a.run, recorded=True)
        left_after_failure = await keys(runner.kv)
        refusing["on"] = False
        sent, left_on_resume = await resumed(runner, bus)  # a runner restarting now: removed, not sent
        await runner.kv.put(outbox.kept_key(a.run), outbox.kept_value(a_log(a.run), made))  # there again
        await box.release(b.run, recorded=True)  # NATS took another report: there is room again
        left = await keys(runner.kv)
    finally:
        await bus.close()
    assert left_after_failure == [outbox.kept_key(a.run)], left_after_failure
    assert sent == [] and left_on_resume == [], (sent, left_on_resume)
    assert left == [], left  # before: it stayed until the next runner loaded
    assert box.leftover == {}


def test_a_report_stored_twice_counts_once_in_the_analyzer(tmp_path: Path) -> None:
    """The worst case of a copy sent again: NATS stored the report twice (past its de-duplication window) and the
    parser made its result twice (another event id): the analyzer keeps one raw log and one result of the run."""
    run = events.RunSpec(run_id="twice-0123456789ab", campaign="tw", node="n1", env="host", test="sysbench-cpu",
                         params={"threads": 1})
    now = events.now()
    metric = [events.Metric(name="events_per_second", value=10.0, unit="events/s", higher_is_better=True)]

    def result(event_id: str, value: float) -> events.ResultV1:
        ev = events.result(events.Result(run=run, tool="sysbench", tool_version="1.0.20", parser_version="1",
                                         metrics=[metric[0].model_copy(update={"value": value})], started_at=now,
                                         ended_at=now), "test")
        return ev.model_copy(update={"id": event_id})

    store = Store(tmp_path / "podtax.duckdb")
    try:
        assert store.write_batch([a_log(run), result("r1", 10.0)]) == {run.run_id}
        assert store.write_batch([a_log(run), result("r2", 11.0)]) == set()
        con = store.cursor()
        counts = [con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [run.run_id]).fetchone()[0]
                  for t in ("raw_logs", "runs", "metrics")]
        value = con.execute("SELECT value FROM metrics WHERE run_id = ?", [run.run_id]).fetchall()
    finally:
        store.close()
    assert counts == [1, 1, 1], counts
    assert value == [(10.0,)], value


@pytest.mark.parametrize("where", ["bucket", "spool"])
async def test_a_leftover_copy_leaves_the_copy_of_its_campaign_submitted_again(
        nats_server: natsserver.NatsServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str) -> None:
    """Run ids depend on the campaign's name, cell, env and repetition only: a campaign submitted again reuses them
    and its copies the same KEPT keys. A copy of the first submission whose removal failed was removed again at the
    next report NATS took, by key: the new submission's copy of that run (in the bucket, or in the spool when the
    bucket refused it) went with it, and a restart ran the run again. Now only that submission's copy goes."""
    bus = await Bus.connect(nats_server.url, "test")
    refusing = {"on": False}
    refuse_deletes(monkeypatch, refusing)
    try:
        runner, a, b = await two_runs(bus, "sa", "sb")
        first = runner.campaigns["sa"].created_at.isoformat()
        box = runner.controlplane.outbox
        box.spool = Spool(tmp_path / "spool")
        await runner.kv.put(outbox.kept_key(a.run), outbox.kept_value(a_log(a.run), first))
        box.copies[a.run.run_id] = True
        refusing["on"] = True
        await box.release(a.run, recorded=True)  # its removal fails: a leftover
        refusing["on"] = False
        again = "2030-01-01T00:00:00+00:00"  # campaign sa submitted again (same run ids); its run a refused again
        submitted_of = box.submitted_of
        box.submitted_of = lambda campaign: again if campaign == "sa" else submitted_of(campaign)
        value = outbox.kept_value(a_log(a.run), again)
        if where == "bucket":
            await runner.kv.put(outbox.kept_key(a.run), value)
        else:
            box.spool.write(a.run, again, value)
        await box.release(b.run, recorded=True)  # NATS took another report
        in_bucket = await keys(runner.kv)
        in_spool = [p.name for p in box.spool.folder.iterdir()] if box.spool.folder.is_dir() else []
        stored = await runner.kv.get(outbox.kept_key(a.run)) if in_bucket else None
    finally:
        await bus.close()
    if where == "bucket":  # before: [] (the new submission's copy deleted)
        assert in_bucket == [outbox.kept_key(a.run)] and stored is not None and stored.value == value, in_bucket
    else:  # before: [] (every submission's file of that key removed)
        assert in_spool == [file_name(a.run, again)], in_spool
    assert box.leftover == {}


async def test_a_spooled_copy_goes_when_its_campaign_left_before_the_report_was_taken(
        nats_server: natsserver.NatsServer, tmp_path: Path) -> None:
    """Review r5 L2: the spool file is named by the submission, and release() asked the campaign's submission of
    the campaigns the runner holds; a campaign finished or cancelled meanwhile is not held ('' unknown), so
    Spool.remove(run, '') looked for another file name and left the copy until the next runner's start, counting
    against the spool's cap. Now an unknown submission removes every file of that run's key."""
    bus = await Bus.connect(nats_server.url, "test")
    try:
        runner, a, _ = await two_runs(bus, "la", "lb")
        box = runner.controlplane.outbox
        box.spool = Spool(tmp_path / "spool")
        box.spool.write(a.run, runner.campaigns["la"].created_at.isoformat(), outbox.kept_value(a_log(a.run), "x"))
        box.copies[a.run.run_id] = True  # the bucket refused it: spooled
        runner.campaigns.pop("la")  # the campaign left the runner (cancelled) before NATS took the report
        await box.release(a.run, recorded=True)
    finally:
        await bus.close()
    assert box.spool.entries() == [] and box.leftover == {}, box.spool.entries()  # before: the file stayed
