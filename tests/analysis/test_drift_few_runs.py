"""A drift below 10 runs a side (audit hF, item 6): pod runs each 1% slower than the last, 1% noise, 8 runs a side,
read "slower" in 44 of 100 seeded cells with no word of the trend: stats/drift.py checked a side from 10 runs only.
The Mann-Kendall test is exact at any size, so the check now runs from 8 runs (6 would flag the perfectly monotone
sides many report tests plant). Real DuckDB file, compare_campaign."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.stats.drift import detect_drift


@pytest.mark.parametrize("runs", [8, 9])
def test_a_pod_slowing_run_by_run_withholds_the_verdict(con, runs):
    rng = np.random.default_rng(2)
    pod = 1000 * 0.99 ** np.arange(runs) * np.exp(rng.normal(0, 0.002, runs))
    insert_cells(con, [CellSpec("node-a", SideSpec(lognormal(rng, 1000, 0.01, runs)), SideSpec(pod))])
    c = compare_campaign(con, "synthetic").cells[0]
    assert "DRIFT" in c.flags and c.verdict == "inconclusive", c.sentence
    assert "pod values fell by" in c.flag_details["DRIFT"] and f"over {runs} runs" in c.flag_details["DRIFT"]


def test_eight_runs_are_checked_seven_are_not():
    assert detect_drift(np.array([100.0, 99, 98, 97, 96, 95, 94, 93])).drift
    assert not detect_drift(np.array([100.0, 94, 97, 95, 99, 93, 98, 96])).drift  # the same values, no trend
    assert not detect_drift(np.array([100.0, 99, 98, 97, 96, 95, 94])).drift  # 7 runs: not checked
