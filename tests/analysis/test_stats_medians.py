"""stats.medians returns exactly what np.median returns (value and sign of zero, NaN when any value is NaN)."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.stats.medians import median, of_sorted


def _same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or (a == b and np.signbit(a) == np.signbit(b))


def _cases() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    out = [np.array([-0.0]), np.array([-0.0, -0.0]), np.array([1.0, np.nan, 2.0]), np.array([np.inf, -np.inf]),
           np.array([3.0, 1.0]), np.array([5.0]), np.full(10, 7.0)]
    for n in (1, 2, 3, 4, 9, 10, 999, 1000, 2501):
        x = np.round(rng.normal(0, 1, n), 1) * 10.0 ** rng.integers(-300, 300)  # ties and extreme scales
        out.append(x)
    return out


@pytest.mark.parametrize("x", _cases(), ids=lambda x: f"n{len(x)}")
def test_medians_equal_numpy(x):
    with np.errstate(invalid="ignore"):  # inf + -inf: numpy warns too
        want = float(np.median(x))
        assert _same(median(x), want)
        assert _same(of_sorted(np.sort(x)), want)
