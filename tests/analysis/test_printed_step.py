"""Values one printed step apart are no group and no outlier. sysbench prints latencies in ms to 2 decimals: sides of
0.05 and 0.06 ms (5% noise around 0.05 and 0.06, rounded) read '2 of 20 pod runs (0.05000, 0.05000 ms) were 16.7%
faster than the pod median of 0.06000 ms: ... a second group' and '1 host run (0.06000 ms) lies far from its side's
median' in 15 of 20 seeded cells: the step of the scale was 0 (no gap held twice, none within 10% of the median, the
values not whole). It is now at least the step the values were printed to (stats.outliers.printed_step), as it was
1 for whole numbers. Planted cells through the real store and compare_campaign."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.stats.outliers import printed_step


def test_latencies_one_printed_step_apart_hold_no_group_and_no_outlier(con):
    rng = np.random.default_rng(4)
    insert_cells(con, [CellSpec(f"node-{i}", SideSpec(np.round(0.05 * np.exp(rng.normal(0, 0.05, 20)), 2)),
                                SideSpec(np.round(0.06 * np.exp(rng.normal(0, 0.05, 20)), 2)),
                                metric="latency_avg_ms", unit="ms", higher_is_better=False) for i in range(20)])
    flagged = [c.flag_details["OUTLIERS"] for c in compare_campaign(con, "synthetic").cells if "OUTLIERS" in c.flags]
    assert len(flagged) <= 1, flagged


def test_a_group_two_printed_steps_off_is_still_one(con):
    host, pod = [0.05] * 20, [0.05] * 18 + [0.07, 0.07]
    insert_cells(con, [CellSpec("node-a", SideSpec(np.array(host)), SideSpec(np.array(pod)), metric="latency_avg_ms",
                                unit="ms", higher_is_better=False)])
    c = compare_campaign(con, "synthetic").cells[0]
    assert sorted(o.value for o in c.outliers if o.group) == [0.07, 0.07] and "second group" in c.sentence


@pytest.mark.parametrize(("values", "step"), [
    ([1.0, 2.0, 30.0], 1.0), ([0.05, 0.06, 1.2], 0.01), ([941.5, 940.0], 0.1), ([0.000123], 1e-6),
    ([1000.123456789], 0.0), ([float("nan"), 2.5], 0.1), ([], 0.0),
])
def test_the_printed_step(values, step):
    assert printed_step(np.array(values, float)) == pytest.approx(step)
