"""Two strays among 4 runs (stats/two_strays.py). Judged one at a time against the other three (stats/few_runs.py),
each stray widened the range the other was judged by: two pod runs 3x slow among 4 carried no OUTLIERS in 80 of 80
planted cells, and the median, half a stray, read "pod 100% slower" with nothing said. Tables through
cell_analysis.analyze, seeded rates, then one planted campaign through the store."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from podtax_analyzer.cell_analysis import analyze
from podtax_analyzer.celldata import CellData, Side
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.stats.few_runs import NOTE
from podtax_analyzer.stats.two_strays import pair_of
from podtax_analyzer.wording import fmt_value

SPLIT = "form two pairs"  # how the warning of a side split into two pairs reads


def _cell(host, pod) -> CellData:
    return CellData("c", "local", "n", "sysbench-cpu", "threads=1", "events_per_second", "events/s", True,
                    Side("host", np.asarray(host, dtype=float), versions=["v"], units=["events/s"]),
                    Side("kubernetes", np.asarray(pod, dtype=float), versions=["v"], units=["events/s"]))


HOST = [1000.0, 1010, 990, 1005]
CASES = [  # host runs, pod runs, the pod runs flagged (indices), whether the side split into two pairs
    (HOST, [1000.0, 1010, 10000, 10100], [2, 3], True),  # two 10x high: the pair far from the host is reported
    (HOST, [1000.0, 1010, 3000, 3100], [2, 3], True),  # two 3x high
    ([h * 10 for h in HOST], [1000.0, 1010, 10000, 10100], [0, 1], True),  # the host near 10000: the low pair
    (HOST, [100.0, 1000, 1010, 10000], [0, 3], False),  # one 10x low, one 10x high: each hid the other
    (HOST, [1000.0, 300, 1010, 330], [1, 3], True),  # two at a third of the speed, in run order
    (HOST, [1000.0, 1005, 990, 1300], [], False),  # 30% off: noise at 4 runs
    (HOST, [1000.0, 1010, 1900, 1950], [], False),  # under twice the others: the edge of the few-runs rule
    (HOST, [1000.0, 1600, 700, 2100], [], False),  # noisy, no pair apart
    (HOST, [1000.0, 1100, 950, 10000], [3], False),  # one stray: the few-runs rule, as before
]


@pytest.mark.parametrize(("host", "pod", "flagged", "split"), CASES)
def test_two_strays_table(host, pod, flagged, split):
    a = analyze(_cell(host, pod), threshold=0.05, seed=1)
    assert [o.value for o in a.fields["outliers"]] == [pod[i] for i in flagged], a.fields["outliers"]
    assert ("OUTLIERS" in a.flag_details) is bool(flagged)
    said = [w for w in a.fields["warnings"] if SPLIT in w]
    assert bool(said) is split, a.fields["warnings"]
    pod_note = [w for w in a.fields["warnings"] if w.startswith(NOTE) and "pod side" in w]
    assert bool(pod_note) is not flagged  # a side with its strays found is no longer 'too few runs to check'
    if split:
        assert "pod side's 4 runs form two pairs" in said[0] and "cannot tell apart" in said[0], said[0]
        assert "farther from the host median" in said[0] and "describing neither" in said[0], said[0]


def test_a_split_with_no_other_side_to_tell_by_is_not_reported():
    assert len(pair_of(np.array([1000.0, 1010, 10000, 10100]), np.zeros(0))[0]) == 0
    # the other side's median halfway (log values) between the pairs: no way to tell
    assert len(pair_of(np.array([100.0, 100, 10000, 10000]), np.array([1000.0, 1000]))[0]) == 0


def test_seeded_rates():
    """Of 2,000 seeded sides of 4 runs: clean ones (10% lognormal noise) never hold two strays; two runs 3x off (both
    high, both low, or one each way) are found in at least 95%, 10x off in all."""
    rng = np.random.default_rng(41)
    other = 1000 * np.exp(rng.normal(0, 0.10, (2000, 4)))
    clean = 1000 * np.exp(rng.normal(0, 0.10, (2000, 4)))
    assert sum(len(pair_of(x, o)[0]) > 0 for x, o in zip(clean, other, strict=True)) == 0
    for f, g in ((3.0, 3.0), (1 / 3, 1 / 3), (3.0, 1 / 3), (10.0, 10.0), (10.0, 0.1)):
        far = clean.copy()
        far[:, 0] *= f
        far[:, 1] *= g
        found = sum(set(pair_of(x, o)[0].tolist()) == {0, 1} for x, o in zip(far, other, strict=True))
        assert found >= (2000 if f == 10.0 else 1900), (f, g, found)


def test_two_latency_strays_among_four_are_reported_through_the_store(con):
    """A planted campaign: 4 runs a side, no effect, two pod runs 3x slower."""
    rng = np.random.default_rng(8)
    host, pod = lognormal(rng, 2.0, 0.04, 4), lognormal(rng, 2.0, 0.04, 4)
    pod[[1, 3]] *= 3.0
    insert_cells(con, [CellSpec("node-a", SideSpec(host), SideSpec(pod), metric="latency_avg_ms", unit="ms",
                                higher_is_better=False)])
    c = compare_campaign(con, "synthetic").cells[0]
    assert "OUTLIERS" in c.flags and "INSUFFICIENT" in c.flags and c.verdict == "inconclusive", c.flags
    assert sorted(o.value for o in c.outliers) == sorted(pod[[1, 3]].tolist())
    assert all(o.run_id for o in c.outliers)
    said = c.flag_details["OUTLIERS"]  # as a second group here (the pair lies close together): said either way
    assert "2 of 4 pod runs" in said and all(fmt_value(v, "ms") in said for v in pod[[1, 3]]), said
    assert any("pod side's 4 runs form two pairs" in w for w in c.warnings), c.warnings
