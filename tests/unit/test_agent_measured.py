"""<state>/measured: the runs a host agent measured, so that a replayed stream (its consumer made again) measures none
of them again (tests/integration/test_agent_consumer_replay.py runs the agent). Here: the file's rules."""

from __future__ import annotations

import datetime as dt
import logging
import os
import resource
import signal
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


def test_a_file_grown_past_what_is_read_is_read_from_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its cut failing (a full disk), the file grows past the 2 KEEP lines load reads: the newest are the ones read
    (before, the first: every run noted since was measured again)."""
    monkeypatch.setattr(measured, "KEEP", 3)
    lines = [f"{measured.key(_run(f'r-{i}'))} {STREAM}\n" for i in range(60)]
    (tmp_path / measured.FILE).write_text("".join(lines))
    assert (tmp_path / measured.FILE).stat().st_size > 2 * 3 * measured.LINE_BYTES
    assert list(measured.load(tmp_path)) == [measured.key(_run(f"r-{i}")) for i in (57, 58, 59)]


def test_a_cut_that_fails_leaves_no_part_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """The file written again with the last KEEP fails midway (a full disk; here a file-size limit: EFBIG after a
    short write): the part written is removed, not left holding the space (before, 14,500 bytes stayed in
    .measured.tmp, written again by every later run), the file and the run noted in memory kept. The error line says
    the run is noted (before: 'run new-1 not noted ... may measure it again', untrue: its line was appended), and the
    cut is not tried again on every run (before: each one rewrote the file and logged) but once the file has grown by
    RETRY_BYTES more."""
    monkeypatch.setattr(measured, "KEEP", 50)
    monkeypatch.setattr(measured, "RETRY_BYTES", 4 * measured.LINE_BYTES)
    path = tmp_path / measured.FILE
    lines = [f"{measured.key(_run(f'old-{i}'))} {STREAM}\n" for i in range(300)]
    while sum(map(len, lines)) >= 50 * measured.LINE_BYTES - 100:
        lines.pop()
    pad = 50 * measured.LINE_BYTES - 20 - sum(map(len, lines))  # the next note goes past the size the cut begins at
    path.write_text("".join(lines) + "#" * (pad - 1) + "\n")  # (a line skipped)
    runs = {f"{'x' * 290}-{i}": STREAM for i in range(49)}  # longer lines in memory than in the file: the cut is larger
    limit = 14_500
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), not the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        with caplog.at_level(logging.ERROR):
            for i in (1, 2, 3):  # the second and third append under the limit, less than RETRY_BYTES later
                measured.add(tmp_path, runs, _run(f"new-{i}"), STREAM)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert len(caplog.records) == 1, f"the cut tried again on every run: {caplog.text}"
    said = caplog.records[0].getMessage()
    assert "not cut back" in said and "run new-1 is noted" in said and "not noted" not in said, said
    assert "File too large" in said or "EFBIG" in said, said
    left = {p.name: p.stat().st_size for p in tmp_path.iterdir()}
    assert list(left) == [measured.FILE], f"the part written of the cut was left: {left}"
    assert list(measured.load(tmp_path))[-3:] == [measured.key(_run(f"new-{i}")) for i in (1, 2, 3)]
    assert measured.counts(runs, _run("new-1"), STREAM)
    # the space back, the cut is done once the file has grown by RETRY_BYTES more (each line < LINE_BYTES)
    line = len(f"{measured.key(_run('new-10'))} {STREAM}\n")
    for i in range(4, 4 + measured.RETRY_BYTES // line + 1):
        measured.add(tmp_path, runs, _run(f"new-{i}"), STREAM)
    assert measured.load(tmp_path) == runs, "not cut once the file grew by RETRY_BYTES"
    assert len(caplog.records) == 1, caplog.text


def test_a_note_cut_short_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An append cut short (a full disk; here a file-size limit, SIGXFSZ ignored) returns fewer bytes and raises
    nothing: the rest is written, so it fails and the note lost is one error line (before, lost silently: review r4)."""
    runs: dict[str, str] = {}
    measured.add(tmp_path, runs, _run("r-1"), STREAM)
    size = (tmp_path / measured.FILE).stat().st_size
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, hard))
    try:
        with caplog.at_level(logging.ERROR):
            measured.add(tmp_path, runs, _run("r-2"), STREAM)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert (tmp_path / measured.FILE).stat().st_size == size + 10, "the first 10 bytes of r-2's note written"
    assert list(measured.load(tmp_path)) == [measured.key(_run("r-1"))]
    assert "run r-2 not noted" in caplog.text, "the note cut short went unlogged"
    assert measured.counts(runs, _run("r-2"), STREAM), "this agent still remembers it"


def test_a_line_cut_short_loses_itself_only(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A note cut short (a write that ran out of space) is ended before the next is appended: only it is lost (before,
    the next one joined it and both were lost)."""
    (tmp_path / measured.FILE).write_text(measured.key(_run("r-1"))[:10])
    measured.add(tmp_path, {}, _run("r-2"), STREAM)
    measured.add(tmp_path, {}, _run("r-3"), STREAM)
    assert list(measured.load(tmp_path)) == [measured.key(_run("r-2")), measured.key(_run("r-3"))]
    # a FIFO in its place: refused at once (one error line, noted in memory), never waited on
    (tmp_path / measured.FILE).unlink()
    os.mkfifo(tmp_path / measured.FILE)
    runs: dict[str, str] = {}
    with caplog.at_level(logging.ERROR):
        measured.add(tmp_path, runs, _run("r-4"), STREAM)
    assert "not a regular file" in caplog.text and measured.counts(runs, _run("r-4"), STREAM)
