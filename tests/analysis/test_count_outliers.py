"""The next count is no outlier. On a side of counts (1, 2 or 3 errors a run: ties, MAD 0) the mean absolute
deviation standing in for the MAD is so small that a run one step from the tied median scored beyond 6, so clean
cells, both sides drawn alike, carried OUTLIERS in 238 of 500 (counts 1-3 at 80/15/5%, 10 runs a side) and 320 (20
runs). An outlier now lies more than a step of the scale from its side's other runs (stats.outliers.off_the_scale,
the step of 43d534c's step_of): a run two steps or more from the rest still is one. Seeded cells through the real
analyze()."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.cell_analysis import analyze
from podtax_analyzer.celldata import CellData, Side
from podtax_analyzer.stats.outliers import off_the_scale

from tests.analysis.test_count_second_group import Draw, _counts, _steps

CELLS = 300


def _noise(rng: np.random.Generator, n: int) -> np.ndarray:
    """Timings of 1000 with 2% noise."""
    return 1000 * (1 + rng.normal(0, 0.02, n))


def _cell(host: np.ndarray, pod: np.ndarray) -> CellData:
    return CellData("c", "local", "n", "sysbench-cpu", "threads=1", "errors", "count", False,
                    Side("host", np.asarray(host, float), versions=["v"], units=["count"]),
                    Side("kubernetes", np.asarray(pod, float), versions=["v"], units=["count"]))


def _outliers(host: np.ndarray, pod: np.ndarray) -> list[tuple[str, float]]:
    """The cell's outliers (side, value)."""
    return [(o.env, o.value) for o in analyze(_cell(host, pod), threshold=0.01, seed=0).fields["outliers"]]


CLEAN = [  # draw, runs a side, at most this many of 300 clean cells carry an outlier (before, after)
    (_counts([0.6, 0.3, 0.1]), 10, 15),  # 23, 8
    (_counts([0.6, 0.3, 0.1]), 20, 3),  # 7, 0
    (_counts([0.8, 0.15, 0.05]), 10, 60),  # 145, 46: a lone 3 beside nine 1s is two steps off, still an outlier
    (_counts([0.8, 0.15, 0.05]), 20, 25),  # 194, 10
]


@pytest.mark.parametrize(("draw", "n", "bound"), CLEAN,
                         ids=["counts-10", "counts-20", "skewed-counts-10", "skewed-counts-20"])
def test_clean_count_cells_rarely_carry_an_outlier(draw: Draw, n: int, bound: int):
    rng = np.random.default_rng(7)
    held = sum(bool(_outliers(draw(rng, n), draw(rng, n))) for _ in range(CELLS))
    assert held <= bound, held


PLANTED = [  # draw, runs a side, planted pod value, at least this many of 300 found (276, 66, 263, 296 both ways)
    (_counts([0.8, 0.15, 0.05]), 20, 10.0, 260),
    (_counts([0.6, 0.3, 0.1]), 10, 10.0, 55),  # a side with MAD 1 scores 10 at 6.1 only: the cutoff's matter
    (_steps, 10, 500.0, 245),
    (_noise, 10, 700.0, 285),
]


@pytest.mark.parametrize(("draw", "n", "planted", "least"), PLANTED,
                         ids=["counts-at-10", "counts-10-at-10", "steps-at-half", "noise-30%-off"])
def test_a_planted_outlier_is_still_found(draw: Draw, n: int, planted: float, least: int):
    rng = np.random.default_rng(7)
    found = 0
    for _ in range(CELLS):
        host, pod = draw(rng, n), draw(rng, n)
        pod[rng.integers(n)] = planted
        found += ("kubernetes", planted) in _outliers(host, pod)
    assert found >= least, found


@pytest.mark.parametrize(("pod", "outliers"), [
    ([1] * 9 + [2], []),  # the next count: no outlier
    ([1] * 18 + [2, 2], []),
    ([1] * 17 + [2, 2, 3], []),  # the 3 is a step beyond the 2s
    ([1] * 19 + [3], [3]),  # a count left empty between: an outlier
    ([1] * 9 + [4], [4]),
    ([1000] * 9 + [500], [500]),
])
def test_an_outlier_lies_more_than_a_step_from_its_sides_other_runs(pod, outliers):
    got = _outliers(np.full(len(pod), float(pod[0])), np.array(pod, float))
    assert [v for env, v in got if env == "kubernetes"] == outliers, got


@pytest.mark.parametrize(("x", "found", "other", "kept"), [
    ([1, 1, 1, 2], [3], [1, 2], []),
    ([1, 1, 1, 3], [3], [1, 1], [3]),
    ([950.0, 1000.0, 1000.0, 500.0], [3], [1050.0], [3]),
    ([950.0, 950.0, 1000.0, 1000.0, 1050.0], [4], [], []),
    ([950.0, 1000.0, 1000.0, 1050.0], [3], [], []),  # a lone 950, 5% off: the scale's step
    ([400.0, 1000.0, 1000.0, 1600.0], [3], [], [3]),  # a lone 400, 60% off: no step (review r2)
    ([1.0, 1.0, float("nan")], [2], [], [2]),
    ([2.0, 2.0], [0, 1], [], [0, 1]),
])
def test_off_the_scale(x, found, other, kept):
    got = off_the_scale(np.array(x, float), np.array(found, dtype=np.int64), np.array(other, float))
    assert got.tolist() == kept
