"""Table-driven unit tests of each stats module."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.stats.bootstrap import bca_ratio_of_medians, bootstrap_medians, jackknife_medians
from podtax_analyzer.stats.drift import detect_drift, pettitt
from podtax_analyzer.stats.hodges_lehmann import hl_ratio, kth_pairwise_differences
from podtax_analyzer.stats.modes import bimodality_coefficient, check_unimodality, describe_modes, two_means_boundary
from podtax_analyzer.stats.multiple import adjust, bh, holm
from podtax_analyzer.stats.outliers import modified_z, outlier_indices
from podtax_analyzer.stats.ranktest import mann_whitney
from podtax_analyzer.stats.verdict import change_phrase, decide, direction
from scipy import stats as sps

RNG = np.random.default_rng(12345)


# ------------------------------------------------------------------ bootstrap
@pytest.mark.parametrize("n", [1, 2, 3, 10, 11, 40, 41])
def test_bootstrap_medians_match_naive_resampling(n):
    x = np.sort(RNG.lognormal(0, 0.5, n))
    fast = bootstrap_medians(x, 40_000, np.random.default_rng(1))
    idx = np.random.default_rng(2).integers(0, n, size=(40_000, n))
    naive = np.median(x[idx], axis=1)
    # same discrete distribution: the share of every possible median agrees
    support = np.union1d(fast, naive)
    f = np.searchsorted(np.sort(fast), support, side="right") / len(fast)
    g = np.searchsorted(np.sort(naive), support, side="right") / len(naive)
    assert np.max(np.abs(f - g)) < 0.012


@pytest.mark.parametrize("x", [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0], [5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 7.0]])
def test_jackknife_medians_closed_form(x):
    xs = np.sort(np.array(x))
    want = [np.median(np.delete(xs, i)) for i in range(len(xs))]
    assert np.allclose(jackknife_medians(xs), want)


@pytest.mark.parametrize("n_host,n_pod", [(15, 15), (25, 40)])
def test_bca_agrees_with_scipy(n_host, n_pod):
    rng = np.random.default_rng(7)
    host = 1000 * np.exp(rng.normal(0, 0.02, n_host))
    pod = 970 * np.exp(rng.normal(0, 0.02, n_pod))
    ours = bca_ratio_of_medians(host, pod, rng=np.random.default_rng(3), n_resamples=20_000)

    def stat(p, h, axis=-1):
        return np.median(p, axis=axis) / np.median(h, axis=axis)

    ref = sps.bootstrap((pod, host), stat, method="BCa", n_resamples=20_000, paired=False, vectorized=True,
                        random_state=np.random.default_rng(4)).confidence_interval
    assert ours.estimate == pytest.approx(np.median(pod) / np.median(host))
    assert ours.low == pytest.approx(ref.low, abs=0.006)
    assert ours.high == pytest.approx(ref.high, abs=0.006)
    assert ours.stable


@pytest.mark.parametrize("host,pod,stable,has_interval", [
    ([], [1.0, 2.0], False, False),
    ([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], False, False),
    ([1.0], [1.0, 2.0], False, False),
    ([1.0, 1.1, 1.2, 1.3], [1.0, 1.1, 1.2, 1.3], False, True),
    ([5.0] * 12, [5.0] * 12, False, True),
])
def test_bca_warns_instead_of_crashing(host, pod, stable, has_interval):
    r = bca_ratio_of_medians(np.array(host), np.array(pod), rng=np.random.default_rng(0))
    assert r.stable is stable
    assert (r.low is not None) is has_interval
    assert r.warnings


# ------------------------------------------------------------------ Hodges-Lehmann
@pytest.mark.parametrize("n,m", [(5, 7), (30, 40), (600, 700)])
def test_kth_pairwise_differences_exact(n, m):
    x, y = np.sort(RNG.normal(size=n)), np.sort(RNG.normal(size=m))
    d = np.sort((y[None, :] - x[:, None]).ravel())
    ks = np.array([1, n * m // 3, n * m // 2, n * m])
    assert np.allclose(kth_pairwise_differences(x, y, ks), d[ks - 1])


@pytest.mark.parametrize("n,has_ci", [(3, False), (4, True), (20, True)])
def test_hl_ratio(n, has_ci):
    rng = np.random.default_rng(n)
    host = 100 * np.exp(rng.normal(0, 0.01, n))
    pod = 0.9 * 100 * np.exp(rng.normal(0, 0.01, n))
    r = hl_ratio(host, pod)
    assert r.estimate == pytest.approx(0.9, rel=0.03)
    assert (r.low is not None) is has_ci
    if has_ci:
        assert r.low < r.estimate < r.high


def test_hl_rejects_non_positive():
    r = hl_ratio(np.array([1.0, -1.0]), np.array([1.0, 2.0]))
    assert r.estimate is None and r.warnings


# ------------------------------------------------------------------ rank test
@pytest.mark.parametrize("host,pod,lo,hi", [
    ([1, 2, 3, 4, 5, 6, 7, 8], [11, 12, 13, 14, 15, 16, 17, 18], 0.0, 0.001),
    ([1, 2, 3, 4, 5, 6], [1.5, 2.5, 3.5, 4.5, 5.5, 6.5], 0.4, 1.0),
    ([3, 3, 3], [3, 3, 3], 1.0, 1.0),
])
def test_mann_whitney(host, pod, lo, hi):
    r = mann_whitney(np.array(host, float), np.array(pod, float))
    assert lo <= r.p_value <= hi


@pytest.mark.parametrize("n1,n2,rounding", [(5, 7, 6), (9, 30, 6), (40, 40, 1), (300, 200, 0)])
def test_mann_whitney_matches_scipy(n1, n2, rounding):
    rng = np.random.default_rng(n1 * n2)
    h = np.round(rng.normal(0, 1, n1), rounding)
    p = np.round(rng.normal(0.3, 1, n2), rounding)
    ours = mann_whitney(h, p)
    ref = sps.mannwhitneyu(p, h, alternative="two-sided", method=ours.method)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert ours.u == pytest.approx(ref.statistic)


def test_mann_whitney_empty_side():
    assert mann_whitney(np.array([]), np.array([1.0])).p_value is None


# ------------------------------------------------------------------ multiple comparisons
@pytest.mark.parametrize("p,method,want", [
    ([0.01, 0.04, 0.03], "holm", [0.03, 0.06, 0.06]),
    ([0.01, 0.04, 0.03], "bh", [0.03, 0.04, 0.04]),
    ([0.5, None, 0.01], "holm", [0.5, None, 0.02]),
    ([0.2, 0.9], "bh", [0.4, 0.9]),
    ([], "holm", []),
])
def test_adjust(p, method, want):
    got = adjust(p, method)
    assert [g if g is None else round(g, 10) for g in got] == want


def test_adjust_matches_scipy_bh():
    p = RNG.uniform(size=50) ** 3
    assert np.allclose(bh(list(p)), sps.false_discovery_control(p, method="bh"))


def test_holm_monotone_and_bounded():
    p = list(RNG.uniform(size=30))
    adj = holm(p)
    order = np.argsort(p)
    assert all(0 <= a <= 1 for a in adj)
    assert all(np.diff(np.array(adj)[order]) >= -1e-12)


def test_adjust_unknown_method():
    with pytest.raises(ValueError):
        adjust([0.1], "bonferroni-ish")


# ------------------------------------------------------------------ modes
def _two_modes(rng, n1, c1, n2, c2, cv=0.02):
    return rng.permutation(np.concatenate([c1 * np.exp(rng.normal(0, cv, n1)), c2 * np.exp(rng.normal(0, cv, n2))]))


@pytest.mark.parametrize("values,bimodal", [
    (_two_modes(np.random.default_rng(1), 77, 130, 83, 238), True),
    (_two_modes(np.random.default_rng(2), 30, 100, 10, 160), True),
    (1000 * np.exp(np.random.default_rng(3).normal(0, 0.01, 200)), False),
    (1000 * np.exp(np.random.default_rng(4).normal(0, 0.3, 200)), False),  # skewed, one mode
    (np.array([1.0, 2.0, 3.0]), False),  # too few runs
    (np.full(30, 5.0), False),
])
def test_check_unimodality(values, bimodal):
    assert check_unimodality(values).bimodal is bimodal


def test_two_means_split_and_shares():
    x = _two_modes(np.random.default_rng(5), 77, 130, 83, 238)
    b = two_means_boundary(x)
    assert 140 < b < 220
    low, high = describe_modes(x, b)
    assert (low.n, high.n) == (77, 83)
    assert low.share == pytest.approx(77 / 160) and high.share == pytest.approx(83 / 160)
    assert low.median == pytest.approx(130, rel=0.02) and high.median == pytest.approx(238, rel=0.02)


@pytest.mark.parametrize("x,lo,hi", [([1, 2, 3], None, None), (list(range(100)), 0.0, 0.5)])
def test_bimodality_coefficient_range(x, lo, hi):
    bc = bimodality_coefficient(np.array(x, float))
    if lo is None:
        assert bc is None
    else:
        assert lo < bc < 5 / 9 + 0.1


# ------------------------------------------------------------------ outliers
@pytest.mark.parametrize("x,want", [
    ([10, 10.1, 9.9, 10.05, 9.95, 10.02, 30], [6]),
    ([10, 10.1, 9.9, 10.05, 9.95, 10.02], []),
    ([5, 5, 5, 5, 5, 9], [5]),  # MAD 0: mean absolute deviation stands in
    ([5, 5, 5], []),
    ([1, 100], []),
])
def test_outliers(x, want):
    assert list(outlier_indices(np.array(x, float))) == want


def test_modified_z_constant():
    assert np.all(modified_z(np.full(5, 2.0)) == 0)


# ------------------------------------------------------------------ drift
@pytest.mark.parametrize("x,drift", [
    (np.concatenate([np.full(15, 100.0), np.full(15, 95.0)]) * np.exp(RNG.normal(0, 0.005, 30)), True),
    (np.linspace(100, 90, 40) * np.exp(RNG.normal(0, 0.003, 40)), True),
    (100 * np.exp(RNG.normal(0, 0.01, 40)), False),
    (np.concatenate([np.full(15, 100.0), np.full(15, 99.8)]) + RNG.normal(0, 0.01, 30), False),  # tiny shift
    (np.arange(5.0), False),  # too few runs
])
def test_detect_drift(x, drift):
    assert detect_drift(x, threshold=0.01).drift is drift


def test_pettitt_finds_step():
    x = np.concatenate([np.zeros(12), np.ones(18)]) + RNG.normal(0, 0.01, 30)
    idx, p = pettitt(x)
    assert idx == 12 and p < 0.001


def test_drift_false_positive_rate_on_stationary_data():
    rng = np.random.default_rng(99)
    hits = sum(detect_drift(1000 * np.exp(rng.normal(0, 0.02, 30)), 0.01).drift for _ in range(500))
    assert hits / 500 <= 0.01


# ------------------------------------------------------------------ verdict
@pytest.mark.parametrize("ratio,lo,hi,p,hib,blocked,want", [
    (0.97, 0.96, 0.98, 0.001, True, False, "slower"),
    (0.97, 0.96, 0.98, 0.001, False, False, "faster"),  # a duration 3% shorter
    (1.05, 1.03, 1.07, 0.001, True, False, "faster"),
    (0.97, 0.96, 0.98, 0.2, True, False, "inconclusive"),  # test and interval disagree
    (1.001, 0.995, 1.006, 0.6, True, False, "no detectable difference"),
    (0.99, 0.985, 1.002, 0.03, True, False, "inconclusive"),  # straddles the band edge
    (0.97, 0.96, 0.98, 0.001, True, True, "inconclusive"),
    (None, None, None, None, True, False, "inconclusive"),
])
def test_decide(ratio, lo, hi, p, hib, blocked, want):
    assert decide(ratio, lo, hi, p, hib, threshold=0.01, blocked=blocked) == want


@pytest.mark.parametrize("ratio,hib,want", [(0.97, True, "pod 3.0% slower"), (1.04, False, "pod 4.0% slower"),
                                            (1.0, True, "pod and host equal"), (0.8, False, "pod 20.0% faster")])
def test_change_phrase(ratio, hib, want):
    assert change_phrase(ratio, hib) == want
    if ratio != 1.0:
        assert direction(ratio, hib) in want
