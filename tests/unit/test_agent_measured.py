"""<state>/measured: the runs a host agent measured, so that a replayed stream (its consumer made again) measures none
of them again (tests/integration/test_agent_consumer_replay.py runs the agent). Here: the file's rules."""

from __future__ import annotations

import datetime as dt
import logging
import os
from pathlib import Path

import pytest
from podtax import events
from podtax_host_agent import guard, measured

AT = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
STREAM = "2026-01-01T00:00:00+00:00"


def _run(run_id: str, submitted: dt.datetime | None = AT) -> events.RunSpec:
    return events.RunSpec(run_id=run_id, campaign="c", node="n1", env="host", test="sysbench-cpu",
                          params={"threads": 1}, submitted=submitted)


def test_runs_noted_are_read_back_oldest_first(tmp_path: Path) -> None:
    assert measured.load(tmp_path) == {}
    runs: dict[str, str] = {}
    for run_id in ("a-1", "b-1", "a-1"):  # noted again: the newest
        measured.add(tmp_path, runs, _run(run_id), STREAM)
    assert list(measured.load(tmp_path)) == [measured.key(_run("b-1")), measured.key(_run("a-1"))]
    assert measured.load(tmp_path) == runs


def test_a_run_counts_in_its_own_nats_and_submission_only(tmp_path: Path) -> None:
    runs: dict[str, str] = {}
    measured.add(tmp_path, runs, _run("a-1"), STREAM)
    measured.add(tmp_path, runs, _run("u-1", None), STREAM)
    assert measured.counts(runs, _run("a-1"), STREAM)
    assert not measured.counts(runs, _run("a-1"), "2026-02-01T00:00:00+00:00"), "another NATS's run"
    assert not measured.counts(runs, _run("a-1", AT + dt.timedelta(microseconds=1)), STREAM), "submitted again"
    assert not measured.counts(runs, _run("b-1"), STREAM)
    assert measured.counts(runs, _run("a-1"), ""), "the stream unknown: a stamped submission is that run"
    assert measured.counts(runs, _run("u-1", None), STREAM)
    assert not measured.counts(runs, _run("u-1", None), ""), "unstamped, the stream unknown: measured again"


def test_a_note_written_while_the_stream_was_unknown_is_judged_by_its_time(tmp_path: Path) -> None:
    runs: dict[str, str] = {}
    measured.add(tmp_path, runs, _run("before-1"), "@100.0")
    measured.add(tmp_path, runs, _run("after-1"), "@300.0")
    stamped = guard.stamped(measured.load(tmp_path), STREAM, 200.0)  # as learn_stream does
    assert not measured.counts(stamped, _run("before-1"), STREAM), "written before this stream was made"
    assert measured.counts(stamped, _run("after-1"), STREAM)


def test_the_file_is_cut_to_the_last_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measured, "KEEP", 3)
    runs: dict[str, str] = {}
    for i in range(20):
        measured.add(tmp_path, runs, _run(f"r-{i}"), STREAM)
        assert len(runs) <= 3
        assert (tmp_path / measured.FILE).stat().st_size <= 3 * measured.LINE_BYTES + measured.LINE_BYTES
    assert list(measured.load(tmp_path)) == [measured.key(_run(f"r-{i}")) for i in (17, 18, 19)]


def test_lines_not_of_a_run_are_skipped_and_a_link_is_not_followed(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / measured.FILE).write_text(f"junk\n{measured.key(_run('a-1'))} {STREAM}\nx not-a-nats\n\n")
    assert list(measured.load(tmp_path)) == [measured.key(_run("a-1"))]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text(f"{measured.key(_run('b-1'))} {STREAM}\n")
    (tmp_path / measured.FILE).unlink()
    os.symlink(elsewhere, tmp_path / measured.FILE)
    with caplog.at_level(logging.ERROR):
        assert measured.load(tmp_path) == {}
        runs: dict[str, str] = {}
        measured.add(tmp_path, runs, _run("c-1"), STREAM)  # noted in memory, one error line, nothing written there
    assert measured.counts(runs, _run("c-1"), STREAM)
    assert elsewhere.read_text() == f"{measured.key(_run('b-1'))} {STREAM}\n"
    assert [r.levelname for r in caplog.records] == ["ERROR", "ERROR"], caplog.text
