"""Each side is sorted once per cell and shared by the statistics (cell_analysis.analyze): every
statistic given the sorted side must return exactly what it returns on the values in run order."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.stats.bootstrap import bca_ratio_of_medians
from podtax_analyzer.stats.drift import detect_drift, mid_ranks, pettitt
from podtax_analyzer.stats.hodges_lehmann import hl_ratio, kth_pairwise_differences
from podtax_analyzer.stats.modes import check_unimodality
from podtax_analyzer.stats.outliers import modified_z_within, outlier_indices, outliers_of
from podtax_analyzer.stats.ranktest import mann_whitney
from scipy.stats import mannwhitneyu, rankdata

RNG = np.random.default_rng(7)


def _samples() -> list[tuple[str, np.ndarray, np.ndarray]]:
    smooth_h, smooth_p = 1000 * np.exp(RNG.normal(0, 0.01, 300)), 970 * np.exp(RNG.normal(0, 0.01, 280))
    ties_h, ties_p = np.round(smooth_h / 5) * 5, np.round(smooth_p / 5) * 5  # many ties across sides
    two = np.concatenate([RNG.normal(100, 1, 40), RNG.normal(130, 1, 40)])
    drift = 100 * (1 + 0.003 * np.arange(60)) * np.exp(RNG.normal(0, 0.002, 60))
    return [("smooth", smooth_h, smooth_p), ("ties", ties_h, ties_p), ("bimodal", two[::-1].copy(), two),
            ("drift", drift, drift[::-1].copy()), ("small", np.array([3.0, 1.0, 2.0]), np.array([2.5, 4.0]))]


SAMPLES = _samples()


@pytest.mark.parametrize("name,h,p", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_sorted_sides_give_the_same_statistics(name, h, p):
    hs, ps = np.sort(h), np.sort(p)
    assert mann_whitney(hs, ps, presorted=True) == mann_whitney(h, p)
    assert hl_ratio(hs, ps, presorted=True) == hl_ratio(h, p)
    a = bca_ratio_of_medians(h, p, rng=np.random.default_rng(1))
    b = bca_ratio_of_medians(hs, ps, rng=np.random.default_rng(1), presorted=True)
    assert (a.estimate, a.low, a.high, a.stable, a.warnings) == (b.estimate, b.low, b.high, b.stable, b.warnings)
    for x, xs in ((h, hs), (p, ps)):
        assert check_unimodality(x, xs) == check_unimodality(x)
        assert detect_drift(x, 0.01, xs) == detect_drift(x, 0.01)
        assert list(outliers_of(modified_z_within(x))) == list(outlier_indices(x))


def test_the_flags_these_samples_exercise_do_fire():
    by_name = {name: (h, p) for name, h, p in SAMPLES}
    assert check_unimodality(by_name["bimodal"][1]).bimodal
    assert detect_drift(by_name["drift"][0], 0.01).drift
    assert mann_whitney(*by_name["ties"]).method == "asymptotic"


@pytest.mark.parametrize("name,h,p", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_mid_ranks_and_pettitt_match_rankdata(name, h, p):
    for x in (h, p, np.concatenate([h, p])):
        xs = np.sort(x)
        assert np.array_equal(mid_ranks(x, xs), rankdata(x))
        if len(x) >= 2:
            assert pettitt(x, xs) == pettitt(x)


@pytest.mark.parametrize("name,h,p", SAMPLES[:2], ids=[s[0] for s in SAMPLES[:2]])
def test_rank_test_counts_u_like_scipy(name, h, p):
    ours = mann_whitney(h, p)
    ref = mannwhitneyu(p, h, alternative="two-sided", method="asymptotic")
    assert ours.u == float(ref.statistic)
    assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-300)


def test_order_statistics_share_brackets_and_stay_exact():
    # above the direct limit (bisection), with ties, adjacent and repeated ranks
    x = np.sort(np.round(RNG.normal(size=700), 2))
    y = np.sort(np.round(RNG.normal(0.1, 1, size=800), 2))
    nm = len(x) * len(y)
    d = np.sort((y[None, :] - x[:, None]).ravel())
    ks = np.array([1, nm // 2, nm // 2 + 1, nm // 2, 12_345, nm - 1, nm])
    assert np.array_equal(kth_pairwise_differences(x, y, ks), d[ks - 1])
