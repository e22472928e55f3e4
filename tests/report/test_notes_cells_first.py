"""`podtax report`'s Notes printed each note, then ": cell #N": a note that is a full sentence read "...than its runs
were.: cell #2" (audit of Dec 6, planted imports with two failed pod runs). The cells now come first, as under Flags
("#2: ..."). Real result and failure events in a real DuckDB file, the analyzer app and the CLI's main()."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from analysis_synth import result_event
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 11, 3, 8, tzinfo=UTC)
HOST = [1000.0, 1003.0, 998.0, 1001.0, 999.0, 1002.0, 1000.5, 997.5, 1001.5, 999.5]


def _failed(i: int, at: datetime) -> events.Envelope:
    run = events.RunSpec(run_id=f"notes-f{i}", campaign="notes", node="node-1", env="kubernetes", test="sysbench-cpu",
                         params={"threads": 1}, cluster="local", attempt=1, timeout_s=60)
    return events.run_failed(events.RunFailed(run=run, stage="parser", reason="truncated", detail="cut short",
                                              started_at=at, ended_at=at + timedelta(seconds=10)), "test")


def test_a_sentence_note_is_printed_after_its_cells(tmp_path, capsys):
    store = Store(tmp_path / "podtax.duckdb")
    batch = []
    for i, h in enumerate(HOST):  # 10 host runs; 8 pod runs 20% slower, 2 failed
        start = T0 + timedelta(minutes=6 * i)
        batch.append(result_event(f"notes-h{i}", "notes", "node-1", "host", h, start))
        at = start + timedelta(minutes=3)
        batch.append(_failed(i, at) if i >= 8 else result_event(f"notes-p{i}", "notes", "node-1", "kubernetes",
                                                                 h * 0.8, at))
    store.write_batch(batch)
    try:
        with serve(create_app(store)) as url:
            assert main(["report", "notes", "--api", url]) == 0
    finally:
        store.close()
    out = capsys.readouterr().out
    notes = out[out.index("\nNotes\n"):]
    assert "  cell #1: Failed runs: 2 of 10 pod runs failed (truncated: 2)" in notes, notes
    assert ".: cell" not in " ".join(notes.split()), notes
