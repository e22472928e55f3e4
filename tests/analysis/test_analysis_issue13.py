"""Issue 13 analysis items with planted data: the correction family, DRIFT, small-n outliers,
equivalence wording and cells keyed by cluster."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.stats.drift import detect_drift
from podtax_analyzer.stats.multiple import holm
from podtax_analyzer.stats.outliers import outlier_indices

PARAMS = {"threads": 4, "time": 10}


def _spec(node: str, metric: str, host, pod, *, unit="events/s", hib=True, cluster="local") -> CellSpec:
    return CellSpec(node, SideSpec(np.asarray(host, float)), SideSpec(np.asarray(pod, float)), params=PARAMS,
                    metric=metric, unit=unit, higher_is_better=hib, cluster=cluster)


def _by(report, node, metric, cluster="local"):
    return next(c for c in report.cells if (c.cluster, c.node, c.metric) == (cluster, node, metric))


@pytest.fixture
def family_report(con):
    """Node n0: a clear 8% slowdown over 10 vs 10 runs (every pod run below every host run) in the
    primary metric, a noisy latency and a constant event count as secondaries; n1..n5: no effect."""
    rng = np.random.default_rng(7)
    host = np.linspace(1000, 1010, 10)
    pod = host * 0.92
    cells = [_spec("n0", "events_per_second", host, pod),
             _spec("n0", "latency_avg_ms", lognormal(rng, 4.0, 0.08, 10), lognormal(rng, 4.3, 0.08, 10),
                   unit="ms", hib=False),
             _spec("n0", "events", [10000] * 10, [10000] * 10, unit="events")]
    for i in range(1, 6):
        cells.append(_spec(f"n{i}", "events_per_second", lognormal(rng, 1000, 0.01, 10),
                           lognormal(rng, 1000, 0.01, 10)))
        for m in ("latency_min_ms", "latency_max_ms", "latency_p95_ms"):
            cells.append(_spec(f"n{i}", m, lognormal(rng, 4, 0.05, 10), lognormal(rng, 4, 0.05, 10), unit="ms",
                               hib=False))
    insert_cells(con, cells)
    return compare_campaign(con, "synthetic")


def test_family_is_one_primary_metric_per_cell(family_report):
    prim = [c for c in family_report.cells if c.primary]
    assert {c.metric for c in prim} == {"events_per_second"} and len(prim) == 6
    assert [c.p_adjusted for c in prim] == pytest.approx(holm([c.p_value for c in prim]))
    head = _by(family_report, "n0", "events_per_second")
    assert head.verdict == "slower" and "after holm;" in head.sentence


def test_secondary_corrected_separately_and_says_when_it_differs(family_report):
    sec = [c for c in family_report.cells if not c.primary and c.p_value is not None]
    assert [c.p_adjusted for c in sec] == pytest.approx(holm([c.p_value for c in sec]))
    lat = _by(family_report, "n0", "latency_avg_ms")
    assert "over the secondary metrics" in lat.sentence
    assert lat.verdict == "inconclusive"  # noisy: 7.5% with 8% noise over 10 runs
    assert "primary metric events_per_second says pod 8.0% slower" in lat.sentence
    assert any("primary metric" in w for w in lat.warnings)
    agree = _by(family_report, "n1", "latency_p95_ms")
    assert not any("primary metric" in w for w in agree.warnings)  # same verdict: nothing to say


def test_metric_without_variance_is_not_a_hypothesis(family_report):
    ev = _by(family_report, "n0", "events")
    assert ev.p_value is None and ev.p_adjusted is None


@pytest.mark.parametrize("shape,total", [("linear", 0.06), ("linear", -0.06), ("step", -0.06)])
def test_drift_is_a_trend_and_withholds_the_verdict(con, shape, total):
    rng = np.random.default_rng(3)
    n = 40
    trend = np.linspace(0, total, n) if shape == "linear" else np.where(np.arange(n) >= n // 2, total, 0.0)
    host = 1000 * np.exp(rng.normal(0, 0.003, n)) * (1 + trend)
    pod = lognormal(rng, 972, 0.003, n)
    insert_cells(con, [_spec("d", "events_per_second", host, pod)])
    c = compare_campaign(con, "synthetic").cells[0]
    assert "DRIFT" in c.flags and c.verdict == "inconclusive" and "withheld" in c.sentence
    assert ("rose by" if total > 0 else "fell by") in c.flag_details["DRIFT"]
    d = detect_drift(host)
    assert d.total is not None and abs(d.total - total) < (0.01 if shape == "linear" else 0.03)


@pytest.mark.parametrize("n,cv,planted,flagged", [
    (5, 0.01, None, False),   # ordinary 1% noise at n = 5: never an outlier
    (7, 0.03, None, False),
    (9, 0.05, None, False),
    (7, 0.01, 3.0, True),     # a value 3x the others is flagged even at n = 7
    (30, 0.01, 1.3, True),    # 30% off at n = 30
    (10, 0.005, None, False),  # 0.5% noise at n = 10 and 40: a value under 1% from the median is no outlier
    (40, 0.005, None, False),  # (flagged in 12% and 9% of such sides before the 1% floor)
    (10, 0.005, 1.08, True),  # but a run 8% off a side this stable is
])
def test_outliers_at_small_n(n, cv, planted, flagged):
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(300):
        x = lognormal(rng, 1000, cv, n)
        if planted:
            x[n // 2] *= planted
        hits += len(outlier_indices(x)) > 0
    assert (hits == 300) if flagged else (hits <= 3)


def test_detected_but_inside_threshold_is_equivalent(con):
    rng = np.random.default_rng(5)
    insert_cells(con, [_spec("e", "events_per_second", lognormal(rng, 1000, 0.002, 200),
                             lognormal(rng, 996, 0.002, 200))])
    c = compare_campaign(con, "synthetic").cells[0]
    assert c.verdict == "no detectable difference" and c.p_adjusted < 0.05
    assert c.sentence.startswith("Within ±1.0% (equivalent at this threshold)")
    assert "a difference is detected" in c.sentence and "pod 0.4% slower" in c.sentence


def test_same_node_name_in_two_clusters_is_two_cells(con):
    rng = np.random.default_rng(9)
    insert_cells(con, [_spec("node-a", "events_per_second", lognormal(rng, 1000, 0.01, 12),
                             lognormal(rng, 900, 0.01, 12), cluster="east"),
                       _spec("node-a", "events_per_second", lognormal(rng, 1000, 0.01, 12),
                             lognormal(rng, 1000, 0.01, 12), cluster="west")])
    cells = compare_campaign(con, "synthetic").cells
    assert sorted(c.cluster for c in cells) == ["east", "west"] and len({c.id for c in cells}) == 2
    assert _by_cluster(cells, "east").verdict == "slower"
    assert _by_cluster(cells, "west").verdict != "slower"
    summary = compare_campaign(con, "synthetic").summary[0]
    assert set(summary.nodes_included) == {"east/node-a", "west/node-a"}
    assert "east/node-a 0.9" in summary.sentence


def _by_cluster(cells, cluster):
    return next(c for c in cells if c.cluster == cluster)
