"""`podtax report` in a terminal: primary metrics by default, compact params, grouped notes, widths."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from podtax.cli.main import main
from podtax.cli.report_view import is_primary_metric, number_ranges
from podtax_analyzer import report_models

ROW = re.compile(r"^\s*#(\d+)\s")
FIXED = "sysbench-cpu: max_prime=10000 time=10"
FEW_RUNS = "fewer than 10 runs on a side"


def multi_metric_campaign() -> list[CellSpec]:
    """sysbench-cpu × threads 1/4 × two metrics on node-a (threads=4 throttled), a CONFOUNDED and
    an INSUFFICIENT cell group on node-b; 8 runs a side, so the bootstrap note repeats everywhere."""
    rng = np.random.default_rng(7)

    def ln(median: float, n: int = 8) -> np.ndarray:
        return lognormal(rng, median, 0.01, n)

    metrics = (("events_per_second", "events/s", True), ("latency_avg", "ms", False))
    cells = []
    for node, threads, host_version, n_host, slow, throttled in (
            ("node-a", 1, "1.0.20", 8, 1.0, False), ("node-a", 4, "1.0.20", 8, 2.0, True),
            ("node-b", 1, "1.0.18", 8, 1.0, False), ("node-b", 4, "1.0.20", 3, 1.0, False)):
        for metric, unit, hib in metrics:
            host_median = 1000.0 * threads if hib else 1.0
            pod_median = host_median / slow if hib else host_median * slow
            pod = SideSpec(ln(pod_median), cpu_limit=1.0 if throttled else None,
                           nr_throttled=[50] * 8 if throttled else None,
                           throttled_usec=[3_000_000] * 8 if throttled else None)
            cells.append(CellSpec(node, SideSpec(ln(host_median, n_host), tool_version=host_version), pod,
                                  params={"threads": threads, "time": 10, "max_prime": 10000}, metric=metric,
                                  unit=unit, higher_is_better=hib, campaign="multi"))
    return cells


@pytest.fixture
def multi_db(con, db_path, monkeypatch):
    insert_cells(con, multi_metric_campaign())
    con.close()
    monkeypatch.delenv("COLUMNS", raising=False)
    return str(db_path)


def _report(capsys, db: str, *args: str) -> str:
    assert main(["report", "multi", "--db", db, *args]) == 0
    return capsys.readouterr().out


def _rows(out: str) -> set[int]:
    table = out.split("\nFlags")[0]
    return {int(m.group(1)) for line in table.splitlines() if (m := ROW.match(line))}


def _cells(capsys, db: str) -> list[dict]:
    return json.loads(_report(capsys, db, "--json"))["cells"]


def test_json_keeps_every_cell_with_primary_flag(multi_db, capsys):
    cells = _cells(capsys, multi_db)
    assert len(cells) == 8
    assert all(isinstance(c["primary"], bool) for c in cells)
    assert {c["metric"] for c in cells if c["primary"]} == {"events_per_second"}
    assert sum(c["primary"] for c in cells) == 4


def test_default_shows_only_primary_rows(multi_db, capsys):
    primary = {i for i, c in enumerate(_cells(capsys, multi_db), 1) if c["primary"]}
    out = _report(capsys, multi_db)
    assert _rows(out) == primary
    assert "4 more metric rows hidden (latency_avg)" in out and "--all-metrics" in out
    assert "4 of 8 cells shown" in out


def test_all_metrics_shows_every_row(multi_db, capsys):
    out = _report(capsys, multi_db, "--all-metrics")
    assert _rows(out) == set(range(1, 9))
    assert "hidden" not in out
    assert "latency_avg" in out.split("\nFlags")[0]


def test_fixed_params_printed_once_varying_per_row(multi_db, capsys):
    out = _report(capsys, multi_db)
    table = out.split("\nFlags")[0]
    assert table.count(FIXED) == 1
    assert "max_prime=10000" not in table.replace(FIXED, "")
    rows = [line for line in table.splitlines() if ROW.match(line)]
    assert any("threads=1" in line for line in rows) and any("threads=4" in line for line in rows)


def test_notes_grouped_and_flags_explained_once(multi_db, capsys):
    out = _report(capsys, multi_db)
    flags, notes = out.split("\nFlags")[1].split("\nNotes")
    notes = notes.split("\nSummary")[0]
    few = [line for line in notes.splitlines() if FEW_RUNS in line]
    assert out.count(FEW_RUNS) == 1 and len(few) == 1 and re.search(r"cells #\d+, #\d+", few[0])
    for name in ("THROTTLED", "CONFOUNDED", "INSUFFICIENT"):
        headings = [line for line in flags.splitlines() if line.strip().startswith(name + ":")]
        assert len(headings) == 1, name
    assert "CPU-throttled by their cgroup" in flags and "Not comparable" in flags
    assert "(no verdict)" in flags  # blocking flags say they withhold the verdict
    # every per-cell sentence names its cell
    assert re.search(r"#\d+ \(node-a threads=4\): \d+ of \d+ pod runs were CPU-throttled", flags)


def test_all_metrics_groups_identical_flag_sentences(multi_db, capsys):
    out = _report(capsys, multi_db, "--all-metrics")
    flags = out.split("\nFlags")[1].split("\nNotes")[0]
    assert flags.count("CPU-throttled by their cgroup") == 1  # one sentence for both throttled metrics
    assert out.count(FEW_RUNS) == 1


def test_summary_only_for_displayed_metrics(multi_db, capsys):
    summary = _report(capsys, multi_db).split("\nSummary")[1]
    assert "events_per_second" in summary and "latency_avg" not in summary
    summary = _report(capsys, multi_db, "--all-metrics").split("\nSummary")[1]
    assert "latency_avg" in summary


@pytest.mark.parametrize("columns", [None, "80", "100", "200"])
@pytest.mark.parametrize("all_metrics", [False, True])
def test_no_line_wider_than_console_nor_folded(multi_db, capsys, monkeypatch, columns, all_metrics):
    if columns is not None:
        monkeypatch.setenv("COLUMNS", columns)
    width = int(columns or 140)
    out = _report(capsys, multi_db, *(["--all-metrics"] if all_metrics else []))
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in out
    for word in ("events_per_second", "no detectable difference" if width >= 100 else "detectable",
                 "THROTTLED", "CONFOUNDED", "INSUFFICIENT", "threads=4", "node-b"):
        assert word in out, word
    if all_metrics:
        assert "latency_avg" in out.split("\nFlags")[0]


def test_wide_layout_off_a_terminal(multi_db, capsys):
    out = _report(capsys, multi_db)
    row = next(line for line in out.splitlines() if ROW.match(line) and "node-a" in line and "threads=4" in line)
    assert "slower" in row and "THROTTLED" in row and "[" in row  # one line per cell at 140 columns
    assert re.search(r"pod \d+\.\d% slower", row)


def test_primary_metric_helpers_agree():
    cases = [("sysbench-cpu", "max_prime=10000 threads=1 time=10", "events_per_second", True),
             ("sysbench-cpu", "threads=1", "latency_avg", False),
             ("fio", "bs=4K rw=randwrite", "write_iops", True),
             ("fio", "bs=4K rw=randread", "write_iops", False),
             ("hdparm", "device=/dev/sda mode=disk", "read_mb_per_second", True),
             ("no-such-test", "a=1", "x", False),
             ("sysbench-cpu", "garbage", "events_per_second", False)]
    for test, params, metric, want in cases:
        assert is_primary_metric(test, params, metric) is want, (test, params, metric)
        assert report_models.is_primary_metric(test, params, metric) is want, (test, params, metric)


def test_number_ranges():
    assert number_ranges([9, 2, 3, 4]) == "#2–4, #9"
    assert number_ranges([5]) == "#5"
