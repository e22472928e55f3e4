"""Shortcuts the per-cell statistics take for speed (issue 15) give exactly what the plain numpy call gives:
spread_ties finds the runs of ties of an ascending side without np.unique's sort, and the bootstrap's
'fewer than 20 distinct resampled ratios' check reads a prefix first (bootstrap._distinct_below)."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.stats.bootstrap import _distinct_below
from podtax_analyzer.stats.modes import spread_ties


def _spread_by_unique(asc: np.ndarray) -> np.ndarray:
    """spread_ties as written with np.unique (its definition)."""
    values, counts = np.unique(asc, return_counts=True)
    if len(values) < 2 or len(values) == len(asc):
        return asc
    step = float(np.diff(values).min())
    offsets = np.concatenate([step * ((np.arange(k) + 0.5) / k - 0.5) for k in counts])
    return np.repeat(values, counts) + offsets


def _sides() -> list[np.ndarray]:
    rng = np.random.default_rng(15)
    out = [np.zeros(0), np.array([5.0]), np.array([2.0, 2.0]), np.array([1.0, 2.0]), np.full(7, 3.5),
           np.array([-0.0, 0.0, 0.0, 1.0])]
    for n in (3, 6, 10, 40, 1000):
        out += [1000 * np.exp(rng.normal(0, 0.01, n)),  # no ties
                np.round(1000 * np.exp(rng.normal(0, 0.05, n)), -1),  # printed to 10: ties
                rng.poisson(2, n).astype(float),  # counts, zeros
                rng.choice([1.0, 1.5, 9.0], n)]  # three values
    return [np.sort(x) for x in out]


@pytest.mark.parametrize("asc", _sides())
def test_spread_ties_is_its_np_unique_definition(asc):
    got, want = spread_ties(asc), _spread_by_unique(asc)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.all(np.diff(got) >= 0)


def test_the_sides_tie_and_do_not():
    spread = [not np.array_equal(spread_ties(a), a) for a in _sides()]
    assert any(spread) and not all(spread)


@pytest.mark.parametrize("x", [
    np.arange(5.0),  # shorter than the prefix
    np.repeat(np.arange(19.0), 200),  # 19 distinct: below
    np.arange(2000.0),  # settled by the prefix
    np.concatenate([np.zeros(500), np.arange(1500.0)]),  # the prefix holds one value, the whole array 1,500
    np.concatenate([np.zeros(500), np.arange(18.0)]),  # 19 distinct, the prefix one
    np.concatenate([np.repeat(np.arange(10.0), 16), np.arange(10.0, 20.0)]),  # 20 distinct, the prefix (160) 10
    np.random.default_rng(3).normal(1, 0.01, 2000),
], ids=["short", "19", "2000", "late", "late-19", "late-20", "normal"])
def test_distinct_below_is_np_unique(x):
    for k in (1, 2, 19, 20, 21):
        assert _distinct_below(x, k) == (np.unique(x).size < k), k
