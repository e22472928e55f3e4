"""A real outlier no longer hides a second group (the known gap of 57f8eb4). The second group (runs together on one side
of their side's median, stats.outliers.is_second_group) withholds "no detectable difference"; it was looked for on a
side only while the other side had no outlier beyond its own cutoff, and an outlier of the same side beyond the group
(or across the median from it) spoiled the group. With one host run 25% off, 2 of 10 pod runs 15% slower (2% noise)
were found in 12 of 1,000 seeded cells; now 917 (stats.outliers.second_group_of leaves a side's outliers, beyond its
cutoff, out of its group, and each side is searched whatever the other holds). The outlier is still reported, beside
the group, and a group beside an outlier of its own side is not called equivalent: leaving out only the runs beyond
twice the cutoff (6a5a29d) called 2 of 20 pod runs 15% slower beside a pod run 25% off "no detectable difference" in
631 (+25%) and 668 (-25%) of 1,000 seeded cells (now 12 and 9).

Each case: one seeded cell through the real analyze() and finalize(), its exact flags, outliers (side, of the group,
value) and verdict."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.cell_analysis import analyze, finalize
from podtax_analyzer.celldata import CellData, Side
from podtax_analyzer.summary import second_group
from podtax_analyzer.wording import fmt_value

H, K = "host", "kubernetes"
NO_DIFFERENCE, INCONCLUSIVE = "no detectable difference", "inconclusive"


def _cell(seed: int, n: int, noise: float, group: float, host_off: float, pod_off: float) -> CellData:
    """Two sides of n runs around 1000 events/s; 2 pod runs ``group`` slower within 0.5% of each other; host run 5 and
    pod run 5 moved by ``host_off`` and ``pod_off``."""
    rng = np.random.default_rng(seed)
    host, pod = 1000 * (1 + rng.normal(0, noise, n)), 1000 * (1 + rng.normal(0, noise, n))
    if group:
        pod[[3, 7]] = 1000 * (1 - group) * (1 + rng.normal(0, 0.005, 2))
    host[5] *= 1 + host_off
    pod[5] *= 1 + pod_off
    return CellData("c", "local", "n", "sysbench-cpu", "threads=1", "events_per_second", "events/s", True,
                    Side(H, host, versions=["sysbench 1.0.20"], units=["events/s"]),
                    Side(K, pod, versions=["sysbench 1.0.20"], units=["events/s"]))


CASES = [  # (seed, n, noise, group, host_off, pod_off), flags, outliers (side, in the group, value), verdict
    # a host run 25% off beside the group: each fails before (the pod side was not searched)
    ((2, 10, .02, .15, -.25, 0), {"OUTLIERS"}, [(H, False, 767.2), (K, True, 853.6), (K, True, 850.8)], INCONCLUSIVE),
    ((3, 20, .02, .15, .25, 0), {"OUTLIERS"}, [(H, False, 1244.6), (K, True, 851.2), (K, True, 853.0)], INCONCLUSIVE),
    ((1, 10, .05, .30, -.25, 0), {"OUTLIERS"}, [(H, False, 766.7), (K, True, 700.0), (K, True, 699.0)], INCONCLUSIVE),
    # a pod run 25% off, across the median from the group or beyond it (modified z-score 22.4, 14.8, 11.7: beyond the
    # cutoff of 6): left out of the group (the first two fail before d5e1d95: no group of 3 runs; the third before this
    # change: with twice the cutoff, 11.7 was left in and the three were no group: "no detectable difference")
    ((1, 10, .02, .15, 0, .25), {"OUTLIERS"}, [(K, True, 850.0), (K, False, 1265.0), (K, True, 848.8)], INCONCLUSIVE),
    ((0, 20, .02, .15, 0, -.25), {"OUTLIERS"}, [(K, True, 844.6), (K, False, 751.4), (K, True, 856.4)], INCONCLUSIVE),
    ((2, 20, .02, .15, 0, -.25), {"OUTLIERS"}, [(K, True, 851.0), (K, False, 761.7), (K, True, 857.7)], INCONCLUSIVE),
    # the group alone, as before
    ((0, 10, .02, .15, 0, 0), {"OUTLIERS"}, [(K, True, 849.5), (K, True, 855.8)], INCONCLUSIVE),
    # no group: a clean cell; one run 25% off on either side is an outlier, no group
    ((0, 10, .02, 0, 0, 0), set(), [], NO_DIFFERENCE),
    ((2, 20, .05, 0, 0, 0), set(), [], INCONCLUSIVE),
    ((0, 10, .02, 0, -.25, 0), {"OUTLIERS"}, [(H, False, 755.4)], NO_DIFFERENCE),
    ((0, 10, .02, 0, 0, -.25), {"OUTLIERS"}, [(K, False, 739.0)], NO_DIFFERENCE),
    # a clean cell of 5% noise: a host run beyond 6 (9.3) does not hide the pod side's pair (-3.8, -4.8), which a clean
    # host side would not either
    ((1977, 10, .05, 0, 0, 0), {"OUTLIERS"}, [(H, False, 1089.0), (K, True, 934.8), (K, True, 919.1)], INCONCLUSIVE),
]


@pytest.mark.parametrize("case,flags,outliers,verdict", CASES, ids=[str(c[0]) for c in CASES])
def test_a_real_outlier_does_not_hide_a_second_group(case, flags, outliers, verdict):
    seed = case[0]
    a = analyze(_cell(*case), threshold=0.05, seed=seed)
    c = finalize(a, a.fields["p_value"], threshold=0.05, correction="holm")
    assert set(c.flags) == flags
    assert [(o.env, round(o.value, 1)) for o in c.outliers] == [(env, value) for env, _, value in outliers]
    grouped = any(of_group for _, of_group, _ in outliers)
    assert ("second group" in c.sentence) is grouped
    assert c.verdict == verdict
    assert [o.group for o in c.outliers] == [of_group for _, of_group, _ in outliers]
    assert second_group(c) is grouped  # the cross-node summary leaves a cell with a second group out
    if grouped and len(outliers) > 2:  # the other outlier is named beside the group
        alone = next(o for o in c.outliers if not o.group)
        side = "host" if alone.env == H else "pod"
        named = f"Besides, 1 {side} run ({fmt_value(alone.value, 'events/s')} events/s) lies far from its side's median"
        assert named in c.flag_details["OUTLIERS"]


@pytest.mark.parametrize("seed,pod_off", [(1, .25), (2, -.25), (3, .25), (3, -.25), (4, .25), (4, -.25)])
def test_a_group_beside_a_pod_run_within_twice_the_cutoff_is_not_called_equivalent(seed, pod_off):
    """2 of 20 pod runs 15% slower together (2% noise) beside one pod run 25% off, at modified z-score 7.9 to 11.7
    (beyond the cutoff of 6, within twice it): the run is left out of the group, which withholds "no detectable
    difference" (review hR4: with twice the cutoff, 631 and 668 of 1,000 such cells were called so; each seed here
    was)."""
    a = analyze(_cell(seed, 20, .02, .15, 0, pod_off), threshold=0.05, seed=seed)
    c = finalize(a, a.fields["p_value"], threshold=0.05, correction="holm")
    assert c.verdict == INCONCLUSIVE, c.sentence
    assert [o.group for o in c.outliers if o.env == K] == [True, False, True]
    assert "second group" in c.sentence
