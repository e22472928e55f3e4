"""The span a verdict on crossed groups gives (cell_sentences.span) and the 95% interval of the ratio at each level
(stats/verdict.py's level_interval and interval_spread, groups_cross's Levels.cis): pure functions, table-driven, and
a seeded check that the per-level intervals cover the planted ratio at their stated confidence, and not more."""

from __future__ import annotations

import math

import numpy as np
import pytest
from podtax_analyzer.cell_sentences import span
from podtax_analyzer.stats.verdict import groups_cross, interval_spread, level_interval


@pytest.mark.parametrize(("ratio", "spread", "n_top", "n_bottom", "df", "want"), [
    # half width t(0.975, df) * spread * sqrt(pi/2 * (1/n_top + 1/n_bottom)), on the log scale; t(16) 2.11991,
    # t(14) 2.14479
    (0.9, 0.02, 2, 8, 16, (0.9 * math.exp(-0.0420094), 0.9 * math.exp(0.0420094))),
    (1.0, 0.01, 8, 8, 14, (math.exp(-0.0134405), math.exp(0.0134405))),
    (2.5, 0.0, 2, 2, 3, None),  # no spread: no interval (was the point 2.5 to 2.5)
])
def test_level_interval(ratio, spread, n_top, n_bottom, df, want):
    got = level_interval(ratio, spread, n_top, n_bottom, df)
    assert got == (pytest.approx(want, rel=1e-6) if want else None)


@pytest.mark.parametrize(("mains", "groups", "want"), [
    # the lists' relative scatter pooled, weighted by n - 1: MAD 1 and 2 at medians 100 and 200 (0.014826, 4 df
    # each), groups of 2 by range / 1.128 (1 / 1.128 / 50.5, 4 / 1.128 / 402; 1 df each)
    (([100, 101, 99, 102, 98], [200, 202, 198, 204, 196]), ([50, 51], [400, 404]), (0.0146440, 10)),
    # whole-number latencies, most main runs tied (MAD 0): the host's step of 1 ms at 10 ms over sqrt(12) (0.028868)
    # is larger than the pooled scatter (the host group's 28 and 29 ms alone: 0.0077765)
    (([10] * 7 + [11], [34] * 6 + [33, 35]), ([28, 29], [12, 12]), (0.0288675, 16)),
    (([10] * 8, [34] * 8), ([28, 28], [12, 12]), (0.0, 16)),  # every list tied: no spread, no interval
    # a group of failed runs at 0 events/s has no relative scatter: left out (it divided by its median of 0: the
    # whole report failed with ZeroDivisionError, review r10); the rest pooled: 4, 4 and 1 df
    (([100, 101, 99, 102, 98], [200, 202, 198, 204, 196]), ([50, 51], [0, 0]), (0.0151535, 9)),
])
def test_interval_spread(mains, groups, want):
    assert interval_spread(mains, groups) == (pytest.approx(want[0], rel=1e-5), want[1])


@pytest.mark.parametrize(("ratio", "intervals", "want"), [
    # sizes |r - 1| the way the ratio lies, from the nearest end to the farthest of all intervals
    (0.316, [(0.314, 0.609), (0.895, 0.905), (0.893, 0.904)], (0.095, 0.686)),
    (0.701, [(0.699, 0.792), (0.875, 0.885), (0.848, 0.858)], (0.115, 0.301)),
    (2.565, [(1.334, 2.575), (1.05, 1.12), (1.04, 1.10)], (0.04, 1.575)),  # above 1: a duration slower
    (0.9, [(0.85, 0.95), (0.97, 1.02)], (0.0, 0.15)),  # an interval reaching 1: the span starts at 0
])
def test_span(ratio, intervals, want):
    assert span(ratio, intervals) == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("n_main", [4, 8])
@pytest.mark.parametrize("tax", [1.0, 0.9, 0.7])
def test_the_intervals_at_each_level_cover_the_planted_ratio(tax, n_main):
    # two machines (the slow one at 35%) mixed n_main/2 and 2/n_main, lognormal noise of 2%, the pod `tax` slower on
    # each: each level's interval holds the planted ratio in 93-99% of 400 seeded cells (95% stated; 95.4-97.3%
    # found; with 1.96 and the main runs' MAD alone 91-92% at 4 main runs), and no more (an interval from 0 to
    # infinity would hold it in all)
    rng = np.random.default_rng([53, n_main, round(tax * 100)])
    covered = total = 0
    for _ in range(400):
        def runs(level, n):
            return list(level * np.exp(rng.normal(0, 0.02, n)))
        host = (runs(1000, n_main), runs(350, 2))
        pod = (runs(350 * tax, n_main), runs(1000 * tax, 2))
        levels = groups_cross(host, pod, 0.35 * tax, 0.01)
        assert levels is not None
        covered += sum(lo <= tax <= hi for lo, hi in levels.cis)
        total += 2
    assert 0.93 * total <= covered <= 0.99 * total, (covered, total)


@pytest.mark.parametrize("tax", [0.9, 0.7])
def test_the_main_runs_interval_covers_the_planted_ratio_of_outlier_groups(tax):
    # a pod `tax` slower; 2 runs a side lie 60% of the way toward the other side's level (outlier runs, not a second
    # machine): the main runs' interval holds the planted ratio in at least 90% of the seeded cells whose groups cross
    # (noise leaves some uncrossed: no Levels; 95% stated, 93.1% and 94.8% found: crossing selects the draws), and
    # at most 99%
    rng = np.random.default_rng([54, round(tax * 100)])
    covered = total = 0
    for _ in range(400):
        def runs(level, n):
            return list(level * np.exp(rng.normal(0, 0.02, n)))
        host = (runs(1000, 8), runs(1000 * (1 + 0.6 * (tax - 1)), 2))
        pod = (runs(1000 * tax, 8), runs(1000 * (tax + 0.6 * (1 - tax)), 2))
        if (levels := groups_cross(host, pod, tax, 0.01)) is not None:
            lo, hi = levels.main[1]
            covered, total = covered + (lo <= tax <= hi), total + 1
    assert total >= 200 and 0.90 * total <= covered <= 0.99 * total, (covered, total)
