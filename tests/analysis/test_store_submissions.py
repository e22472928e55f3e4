"""The analyzer leaves out a report of an earlier submission of a campaign (RunSpec.submitted another than the current
campaign.submitted of its name: run ids repeat when a campaign is submitted again), takes a name's submissions in
stream order, never by the submitters' clocks (a redelivery changes nothing; review r1: a clock behind, a time
without timezone), and stores a report without the stamp (an older runner or agent) as before.
Real DuckDB file; tests/integration/test_late_report_of_earlier_submission.py runs it with the services."""

from __future__ import annotations

import logging
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from podtax import events
from podtax_analyzer.store import Store

SPEC = {"name": "c"}


def submitted(at: object) -> events.CampaignSubmittedV1:
    return events.campaign_submitted(events.CampaignSubmitted(campaign="c", spec=SPEC)).model_copy(
        update={"time": at})


def result(run_id: str, stamp: object) -> events.ResultV1:
    run = events.RunSpec(run_id=run_id, campaign="c", node="n1", env="host", test="sysbench-cpu",
                         params={"threads": 1}, submitted=stamp)
    now = events.now()
    return events.result(events.Result(run=run, tool="sysbench", tool_version="1.0.20", parser_version="1",
                                       metrics=[events.Metric(name="events_per_s", value=100.0, unit="1/s",
                                                              higher_is_better=True)],
                                       started_at=now, ended_at=now), "test", event_id=run.event_id("outcome"))


def test_reports_of_an_earlier_submission_are_left_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first = events.now() - timedelta(hours=1)
    second = first + timedelta(minutes=30)
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch([submitted(first), result("c-1", first)])
        store.write_batch([submitted(second), result("c-2", first)])  # the new submission and, after it, a late one
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="podtax.analyzer.store"):
            store.write_batch([submitted(first), result("c-3", first), result("c-4", None), result("c-5", second)])
        with store.cursor() as con:
            runs = sorted(r[0] for r in con.execute("SELECT run_id FROM runs").fetchall())
            held = con.execute("SELECT submitted_at FROM campaigns WHERE campaign = 'c'").fetchall()
    finally:
        store.close()
    assert runs == ["c-1", "c-4", "c-5"]  # c-2, c-3: of the first submission, delivered after the second
    assert held == [(second,)]  # the redelivered first submission does not take the name back
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and lines[0].startswith("podtax.run.result.v1 of run c-3 not stored: it is of an earlier "
                                                   "submission of campaign c"), lines
    assert "submitted again" not in " ".join(lines)  # a redelivery, not a new submission


def test_a_run_event_id_is_one_per_run_and_submission() -> None:
    run = events.RunSpec(run_id="c-1", campaign="c", node="n1", env="host", test="sysbench-cpu", params={})
    assert run.event_id("log") == "c-1.log"  # not stamped (an older runner): as before
    first = run.model_copy(update={"submitted": events.now()})
    second = run.model_copy(update={"submitted": first.submitted + timedelta(microseconds=1)})
    assert first.event_id("log") == first.event_id("log") != second.event_id("log")
    assert first.event_id("log").startswith("c-1.log.")
    # a consumer of before (unknown fields ignored) reads a stamped run; an event without the field reads as None
    assert events.decode(events.encode(events.run_requested(first, "t"))).data.run.submitted == first.submitted
    assert events.decode(events.encode(events.run_requested(run, "t"))).data.run.submitted is None


def stored(store: Store) -> list[str]:
    with store.cursor() as con:
        return sorted(r[0] for r in con.execute("SELECT run_id FROM runs").fetchall())


def test_a_resubmission_from_a_machine_whose_clock_is_behind_is_the_current_one(tmp_path: Path) -> None:
    """Review r1: submitted again (after a NATS reset) from a machine 10 min behind the first submitter, the new
    submission's time is earlier than the held one; ordered by time, every report of it was dropped."""
    first = events.now() - timedelta(minutes=5)
    second = first - timedelta(minutes=10)
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch([submitted(first), result("c-1", first)])
        store.write_batch([submitted(second)])
        store.write_batch([result("c-2", second), result("c-3", second), result("c-4", first)])
        assert stored(store) == ["c-1", "c-2", "c-3"]  # c-4: the first submission's, after the second in NATS
    finally:
        store.close()


def test_submissions_in_one_batch_are_taken_in_stream_order(tmp_path: Path) -> None:
    first = events.now() - timedelta(hours=1)
    second = first + timedelta(minutes=30)
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch([submitted(first), result("c-1", first), submitted(second), result("c-2", first),
                           result("c-3", second), submitted(first)])
        assert stored(store) == ["c-1", "c-3"]  # c-1 came while the first was current; c-2 after the second
        with store.cursor() as con:
            assert con.execute("SELECT submitted_at FROM campaigns").fetchall() == [(second,)]
    finally:
        store.close()


def test_a_submission_time_without_timezone_is_read_as_utc(tmp_path: Path) -> None:
    """Review r1: events.decode accepts a time without timezone; compared with the held (aware) one it raised
    TypeError and the batch was dead-lettered."""
    naive = (events.now() - timedelta(hours=1)).replace(tzinfo=None, microsecond=0)
    later = naive + timedelta(minutes=1)
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch([submitted(naive), result("c-1", naive)])
        store.write_batch([submitted(naive), submitted(naive.replace(tzinfo=UTC)), result("c-2", naive)])
        store.write_batch([submitted(later), result("c-3", naive), result("c-4", later.replace(tzinfo=UTC))])
        assert stored(store) == ["c-1", "c-2", "c-4"]
    finally:
        store.close()


def test_a_file_written_before_the_submissions_table_knows_its_submission(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first = events.now() - timedelta(hours=1)
    path = tmp_path / "podtax.duckdb"
    store = Store(path)
    try:
        store.write_batch([submitted(first), result("c-1", first)])
        with store.cursor() as con:
            con.execute("DROP TABLE campaign_submissions")  # as a file of before
    finally:
        store.close()
    store = Store(path)
    try:
        with caplog.at_level(logging.ERROR, logger="podtax.analyzer.store"):
            store.write_batch([submitted(first), result("c-2", first)])  # a redelivery: the same submission
        assert stored(store) == ["c-1", "c-2"]
        assert not caplog.records, [r.getMessage() for r in caplog.records]  # not 'submitted again'
    finally:
        store.close()


def test_a_report_read_before_its_submission_is_stored(tmp_path: Path) -> None:
    """Review r5: an analyzer restarted holding the new submission's campaign.submitted fetched and not acked reads
    that submission's reports first (NATS gives the event again only after ack_wait): with the earlier submission
    current, they were dropped for good as 'of an earlier submission'. A time not seen and later than the current
    one's is a submission still to be read; one earlier (never seen: before a NATS reset) is still left out."""
    first = events.now() - timedelta(hours=1)
    second = first + timedelta(minutes=30)
    older = first - timedelta(minutes=30)
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch([submitted(first), result("c-1", first)])
        store.write_batch([result("c-2", second), result("c-3", older)])  # before its submission; a never-seen older
        store.write_batch([submitted(second), result("c-4", second), result("c-5", first)])
        assert stored(store) == ["c-1", "c-2", "c-4"]
    finally:
        store.close()
