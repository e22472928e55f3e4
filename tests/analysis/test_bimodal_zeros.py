"""The gap rule (stats/modes.separated_modes) on a side holding 0: it split sides on log values and skipped any side
holding 0 or less, so 17 runs at 0 errors beside 3 near 50 were never two modes. Such a side is split on its values
now (as two_means_boundary splits it); unimodal counts holding zeros stay unimodal."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.stats.modes import check_unimodality, two_means_boundary

ZEROS_AND_FIFTY = np.r_[np.zeros(17), [48.0, 50.0, 53.0]]


def test_runs_at_zero_beside_a_tight_mode_are_two_modes():
    u = check_unimodality(ZEROS_AND_FIFTY)
    assert u.bimodal and u.separated is not None, u
    assert u.boundary == two_means_boundary(ZEROS_AND_FIFTY) == 24.0


@pytest.mark.parametrize("values", [
    np.array([0, 0, 1, 1, 1, 2, 0, 3, 1, 0, 2, 1], dtype=float),  # counts near 1
    np.array([-0.3, 0.1, 0.4, -0.1, 0.0, 0.2, -0.2, 0.3, -0.4, 0.05], dtype=float),  # values around 0
])
def test_unimodal_sides_holding_zero_stay_unimodal(values):
    assert not check_unimodality(values).bimodal


def test_rates_on_seeded_count_sides():
    """Of 400 seeded sides of 20 Poisson(1) counts, none is BIMODAL (none before); of 400 sides of 17 zeros and 3
    Poisson(50) counts, 340 or more are (none before)."""
    rng = np.random.default_rng(45)
    assert sum(check_unimodality(rng.poisson(1, 20).astype(float)).bimodal for _ in range(400)) <= 2
    found = sum(check_unimodality(np.r_[np.zeros(17), rng.poisson(50, 3)]).bimodal for _ in range(400))
    assert found >= 320, found
