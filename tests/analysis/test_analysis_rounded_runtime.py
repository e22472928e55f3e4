"""fio's ROUNDED_RUNTIME run flag (parsers/fio_flags.py: a job direction timed 20 ms or less, whose IOPS and
bandwidth fio's whole-ms rounding may put over 5% too low) reached the user only as a name in `podtax results`:
the analyzer read no cell flag from it, so the report's cell (ratio, verdict) rested on such figures unexplained.
Now an IOPS or bandwidth cell whose runs carry it is flagged ROUNDED_RUNTIME (how many runs of each side, the
parser's words, run longer); its latency cells are not (the rounding does not touch them). The flag text is the
parser's own, from a real capture (tests/corpus-found/fio-3.33-template-1m-5ms.json)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from podtax.flags import BLOCKING, LEGEND, ORDER
from podtax.parsers import parse_text
from podtax.parsers.fio_flags import ROUNDED_MAX_MS, ROUNDED_SHARE
from podtax_analyzer.comparisons import compare_campaign

FOUND = Path(__file__).resolve().parents[1] / "corpus-found" / "fio-3.33-template-1m-5ms.json"
FIO = {"test": "fio", "tool": "fio", "tool_version": "3.33",
       "params": {"rw": "randread", "bs": "4K", "size": "1M", "iodepth": 16, "direct": True, "runtime": 10}}


def _flag() -> str:
    return next(f for f in parse_text(FOUND.read_text(), "fio").flags if f.startswith("ROUNDED_RUNTIME: "))


def _cells(con, flagged_pod_runs: int) -> dict[str, object]:  # noqa: ANN001 - a DuckDB connection
    flags = [[_flag()]] * flagged_pod_runs + [[]] * (12 - flagged_pod_runs)
    spec = {k: v for k, v in FIO.items() if k != "tool_version"}
    rng = np.random.default_rng(7)
    cells = [CellSpec("node-r", SideSpec(lognormal(rng, 80000, 0.02, 12), tool_version="3.33"),
                      SideSpec(lognormal(rng, 64000, 0.02, 12), tool_version="3.33", flags=flags),
                      metric=metric, unit=unit, higher_is_better=hib, **spec)
             for metric, unit, hib in (("read_iops", "IOPS", True), ("read_bw", "KiB/s", True),
                                       ("read_clat_mean", "µs", False))]
    insert_cells(con, cells)
    return {c.metric: c for c in compare_campaign(con, "synthetic").cells}


def test_a_rate_cell_of_rounded_runs_is_flagged_with_what_to_do(con) -> None:  # noqa: ANN001
    cells = _cells(con, 3)
    for metric in ("read_iops", "read_bw"):
        c = cells[metric]
        assert "ROUNDED_RUNTIME" in c.flags, (metric, c.flags)
        text = c.flag_details["ROUNDED_RUNTIME"]
        assert text.startswith("3 pod runs did their I/O in 20 ms or less") and "fio timed podtax read as 5 ms" in text
        assert "over 5% too low" in text and "run longer" in text and text.endswith(".")
        assert c.verdict in ("slower", "inconclusive", "no detectable difference")  # not blocking: a verdict stays
    assert "ROUNDED_RUNTIME" not in cells["read_clat_mean"].flags  # latencies are not rounded


def test_no_rounded_run_no_flag(con) -> None:  # noqa: ANN001
    assert all("ROUNDED_RUNTIME" not in c.flags for c in _cells(con, 0).values())


def test_the_flag_is_worded_where_the_others_are() -> None:
    assert "ROUNDED_RUNTIME" in ORDER and "ROUNDED_RUNTIME" not in BLOCKING
    legend = LEGEND["ROUNDED_RUNTIME"]
    assert f"{ROUNDED_MAX_MS} ms or less" in legend and f"over {ROUNDED_SHARE:.0%} too low" in legend
    assert "run longer" in legend and "time_based" in legend


def _rw_cells(con, flag: str) -> dict[str, object]:  # noqa: ANN001 - a DuckDB connection
    """randrw cells whose 3 flagged pod runs carry `flag` (a flag names the directions its rounding touched)."""
    spec = {**FIO, "params": {**FIO["params"], "rw": "randrw"}}
    spec = {k: v for k, v in spec.items() if k != "tool_version"}
    rng = np.random.default_rng(7)
    flags = [[flag]] * 3 + [[]] * 9
    cells = [CellSpec("node-r", SideSpec(lognormal(rng, 80000, 0.02, 12), tool_version="3.33"),
                      SideSpec(lognormal(rng, 64000, 0.02, 12), tool_version="3.33", flags=flags),
                      metric=metric, unit=unit, higher_is_better=True, **spec)
             for metric, unit in (("read_iops", "IOPS"), ("write_bw", "KiB/s"), ("podtax_write_iops", "IOPS"))]
    insert_cells(con, cells)
    return {c.metric: c for c in compare_campaign(con, "synthetic").cells}


def test_only_the_directions_the_flag_names_are_flagged(con) -> None:  # noqa: ANN001
    """The real capture's flag names `read` only: a randrw run's write rates (timed longer) are not marked."""
    flag = _flag()
    assert flag.endswith("; directions so timed: read"), flag
    cells = _rw_cells(con, flag)
    assert "ROUNDED_RUNTIME" in cells["read_iops"].flags
    assert all("ROUNDED_RUNTIME" not in cells[m].flags for m in ("write_bw", "podtax_write_iops"))


def test_a_flag_stored_before_it_named_directions_marks_every_rate(con) -> None:  # noqa: ANN001
    cells = _rw_cells(con, _flag().rsplit("; directions so timed: ", 1)[0])
    assert all("ROUNDED_RUNTIME" in cells[m].flags for m in ("read_iops", "write_bw", "podtax_write_iops"))
