"""The span a verdict on crossed groups gives (cell_sentences.span) and the 95% interval of the ratio at each level
(stats/verdict.py's level_interval, groups_cross's Levels.cis): pure functions, table-driven, and a seeded check that
the per-level intervals cover the planted ratio at their stated confidence."""

from __future__ import annotations

import math

import numpy as np
import pytest
from podtax_analyzer.cell_sentences import span
from podtax_analyzer.stats.verdict import groups_cross, level_interval


@pytest.mark.parametrize(("ratio", "spread", "n_top", "n_bottom", "want"), [
    # half width 1.96 * spread * sqrt(pi/2 * (1/n_top + 1/n_bottom)), on the log scale
    (0.9, 0.02, 2, 8, (0.9 * math.exp(-0.0388410), 0.9 * math.exp(0.0388410))),
    (1.0, 0.01, 8, 8, (math.exp(-0.0122826), math.exp(0.0122826))),
    (2.5, 0.0, 2, 2, (2.5, 2.5)),  # no spread: the point
])
def test_level_interval(ratio, spread, n_top, n_bottom, want):
    assert level_interval(ratio, spread, n_top, n_bottom) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(("ratio", "intervals", "want"), [
    # sizes |r - 1| the way the ratio lies, from the nearest end to the farthest of all intervals
    (0.316, [(0.314, 0.609), (0.895, 0.905), (0.893, 0.904)], (0.095, 0.686)),
    (0.701, [(0.699, 0.792), (0.875, 0.885), (0.848, 0.858)], (0.115, 0.301)),
    (2.565, [(1.334, 2.575), (1.05, 1.12), (1.04, 1.10)], (0.04, 1.575)),  # above 1: a duration slower
    (0.9, [(0.85, 0.95), (0.97, 1.02)], (0.0, 0.15)),  # an interval reaching 1: the span starts at 0
])
def test_span(ratio, intervals, want):
    assert span(ratio, intervals) == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("tax", [1.0, 0.9, 0.7])
def test_the_intervals_at_each_level_cover_the_planted_ratio(tax):
    # two machines (the slow one at 35%) mixed 8/2 and 2/8, lognormal noise of 2%, the pod `tax` slower on each: each
    # level's interval holds the planted ratio in at least 93% of 400 seeded cells (95% stated)
    rng = np.random.default_rng([53, round(tax * 100)])
    covered = total = 0
    for _ in range(400):
        def runs(level, n):
            return list(level * np.exp(rng.normal(0, 0.02, n)))
        host = (runs(1000, 8), runs(350, 2))
        pod = (runs(350 * tax, 8), runs(1000 * tax, 2))
        levels = groups_cross(host, pod, 0.35 * tax, 0.01)
        assert levels is not None
        covered += sum(lo <= tax <= hi for lo, hi in levels.cis)
        total += 2
    assert covered >= 0.93 * total, (covered, total)


@pytest.mark.parametrize("tax", [0.9, 0.7])
def test_the_main_runs_interval_covers_the_planted_ratio_of_outlier_groups(tax):
    # a pod `tax` slower; 2 runs a side lie 60% of the way toward the other side's level (outlier runs, not a second
    # machine): the main runs' interval holds the planted ratio in at least 90% of the seeded cells whose groups cross
    # (noise leaves some uncrossed: no Levels; 95% stated, 93.1% and 93.3% found: crossing selects the draws)
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
    assert total >= 200 and covered >= 0.90 * total, (covered, total)
