"""`podtax compare` across a unit change (review hR #8): campaign "old" stored a one-environment cell's metric in
us (~104) and "newer" the same runs in ms (0.104), as a parser that changed its unit between versions publishes
them; the comparison read "Improved: kubernetes median (us) 104.1 us in old, 0.1041 us in newer (difference -104.0
us, ...)", a 1000x "improvement" that was a unit change. A median compared across units (or over runs of several)
now has no difference, interval or p-value: the row is "not comparable" and flagged CONFOUNDED naming the units.
Real DuckDB file, compare_campaigns."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells
from podtax_analyzer.campaign_compare import compare_campaigns
from podtax_analyzer.store import Store

RNG = np.random.default_rng(0)
BASE = 104 * np.exp(RNG.normal(0, 0.01, 10))


def _cell(campaign: str, values: np.ndarray, unit: str) -> CellSpec:
    return CellSpec("n1", SideSpec(np.array([])), SideSpec(values), campaign=campaign, unit=unit, test="pod-startup",
                    metric="ready_p50", higher_is_better=False, tool="podtax-controlplane", params={"count": 10})


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("units") / "podtax.duckdb")
    c = store.cursor()
    insert_cells(c, [_cell("old", BASE, "us")])
    insert_cells(c, [_cell("newer", BASE / 1000, "ms")])
    insert_cells(c, [_cell("same", BASE * 0.9, "us")])
    # one campaign whose runs mix the two units (its first half in ms)
    insert_cells(c, [_cell("mixed", BASE[:5] / 1000, "ms"), _cell("mixed", BASE[5:], "us")])
    yield c
    store.close()


def _row(con, base: str, new: str):
    (row,) = compare_campaigns(con, base, new).cells
    return row


def test_a_median_is_not_compared_across_two_units(con):
    row = _row(con, "old", "newer")
    assert row.verdict == "not comparable"
    assert (row.diff, row.diff_ci_low, row.change, row.p_value, row.p_adjusted) == (None,) * 5
    assert row.flags == ["NEW:CONFOUNDED"]
    assert row.sentence == ("Not comparable: old runs reported ready_p50 in us and newer runs in ms, so their values "
                            "are not in one unit; no change is given.")
    assert row.flag_details["NEW:CONFOUNDED"].startswith("NEW (newer): Not comparable")
    assert "us in old" in row.compared and "ms in newer" in row.compared


def test_a_campaign_mixing_units_is_the_confounded_one(con):
    row = _row(con, "mixed", "old")
    assert row.verdict == "not comparable" and row.diff is None and row.p_value is None
    # once: the cell's own CONFOUNDED (4cda361) and compare's were both listed (review hR2)
    assert row.flags.count("BASE:CONFOUNDED") == 1 and "NEW:CONFOUNDED" not in row.flags, row.flags
    assert "mixed runs reported ready_p50 in ms + us and old runs in us" in row.sentence


def test_one_unit_is_still_compared(con):
    row = _row(con, "old", "same")
    assert row.flags == [] and row.verdict == "improved"
    assert row.diff == pytest.approx(float(np.median(BASE * 0.9) - np.median(BASE)))
    assert row.p_adjusted is not None and row.p_adjusted < 0.05
