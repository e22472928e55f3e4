"""Hodges-Lehmann's order statistics of large cells (n*m above DIRECT_LIMIT, found by narrowing brackets)
equal the brute-force ones: continuous values, ties, heavy ties, two modes, long tails."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.stats.hodges_lehmann import DIRECT_LIMIT, kth_pairwise_differences


def _pairs() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(12)
    h, p = rng.normal(0, 0.01, 700), rng.normal(0.02, 0.03, 520)
    return {
        "continuous": (h, p),
        "ties": (np.round(h, 3), np.round(p, 3)),
        "heavy-ties": (np.round(h, 1), np.round(p, 1)),
        "one-value": (np.zeros(600), np.zeros(500)),
        "two-modes": (h, np.concatenate([p[:260], p[260:] + 0.3])),
        "long-tail": (rng.standard_cauchy(800) * 0.01, p),
    }


PAIRS = _pairs()


@pytest.mark.parametrize("name", list(PAIRS))
def test_order_statistics_equal_brute_force(name):
    h, p = PAIRS[name]
    x, y = np.sort(h), np.sort(p)
    nm = len(x) * len(y)
    assert nm > DIRECT_LIMIT
    ks = np.array([nm // 2, nm // 2 + 1, nm // 40, nm - nm // 40 + 1, 1, nm])
    want = np.sort((y[None, :] - x[:, None]).ravel())[ks - 1]
    assert np.array_equal(kth_pairwise_differences(x, y, ks), want)
