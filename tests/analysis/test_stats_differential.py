"""Differential tests of the optimized statistics against obviously-correct references.

Each product function (stats/*) is compared, on seeded random and adversarial inputs, with a
brute-force or textbook computation written here (all pairwise differences, scipy's own tests,
the correction formulas spelled out), plus seeded simulations of the properties a user relies on:
interval coverage, the false-claim rate of a verdict, and the direction of "slower" for both kinds
of metric. Whole file: a few seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from podtax_analyzer.cell_analysis import analyze, finalize
from podtax_analyzer.celldata import CellData, Side
from podtax_analyzer.stats.bootstrap import bca_ratio_of_medians
from podtax_analyzer.stats.drift import ALPHA as DRIFT_ALPHA
from podtax_analyzer.stats.drift import detect_drift, pettitt
from podtax_analyzer.stats.hodges_lehmann import DIRECT_LIMIT, hl_ratio, kth_pairwise_differences
from podtax_analyzer.stats.modes import BC_THRESHOLD, DIP_ALPHA, bimodality_coefficient, check_unimodality
from podtax_analyzer.stats.multiple import bh, holm
from podtax_analyzer.stats.outliers import (
    LARGE_N_FLOOR,
    SMALL_N_FLOOR,
    SMALL_N_WIDEN,
    cutoff_for,
    modified_z,
    outlier_indices,
)
from podtax_analyzer.stats.ranktest import mann_whitney
from scipy import stats as sps


# ------------------------------------------------------------------ references
def hl_reference(host: np.ndarray, pod: np.ndarray,
                 confidence: float = 0.95) -> tuple[float, float | None, float | None]:
    """Brute force: every log ratio, sorted; Moses ranks from the normal approximation of U."""
    x, y = np.log(host), np.log(pod)
    n, m = len(x), len(y)
    d = np.sort((y[None, :] - x[:, None]).ravel())
    nm = n * m
    est = math.exp(float(np.median(d)))
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    c = math.floor(nm / 2 + 0.5 - z * math.sqrt(nm * (n + m + 1) / 12))
    if c < 1:
        return est, None, None
    return est, math.exp(d[c - 1]), math.exp(d[nm - c])


def u_null_cdf(n: int, m: int) -> np.ndarray:
    """Exact null CDF of the Mann-Whitney U (no ties), by the classic recursion on counts."""
    f = {(i, j): None for i in range(n + 1) for j in range(m + 1)}
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 or j == 0:
                f[i, j] = np.zeros(n * m + 1)
                f[i, j][0] = 1.0
                continue
            shifted = np.zeros(n * m + 1)
            shifted[j:] = f[i - 1, j][: n * m + 1 - j]
            f[i, j] = shifted + f[i, j - 1]
    counts = f[n, m]
    return np.cumsum(counts) / counts.sum()


def holm_reference(p: list[float]) -> list[float]:
    """statsmodels' multipletests(method="holm") written out."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def bh_reference(p: list[float]) -> list[float]:
    """statsmodels' multipletests(method="fdr_bh") written out."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 1.0
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        running = min(running, p[i] * m / (rank + 1))
        out[i] = min(1.0, running)
    return out


def pettitt_reference(x: np.ndarray) -> tuple[int, float]:
    """Pettitt (1979) from its definition: U_t = sum_{i<=t} sum_{j>t} sign(x_i - x_j)."""
    n = len(x)
    s = np.sign(x[:, None] - x[None, :])
    u = np.array([s[:t, t:].sum() for t in range(1, n)])
    t = int(np.argmax(np.abs(u)))
    k = float(abs(u[t]))
    return t + 1, min(1.0, 2.0 * math.exp(-6.0 * k * k / (n**3 + n**2)))


def modified_z_reference(x: np.ndarray) -> np.ndarray:
    """Iglewicz-Hoaglin, with the mean absolute deviation standing in when MAD is 0, and the
    documented floor of the scale (SMALL_N_FLOOR x |median| below 10 values, LARGE_N_FLOOR x |median| from 10); 5 to
    9 positive values: Rosner's generalized ESD on log values, step i scoring the i-th farthest from the median over
    SMALL_N_WIDEN[n] sds of the values but the i farthest, floored at log(1 + SMALL_N_FLOOR); every value scored on
    the scale of the last step passing 3.5 (the first when none), those not flagged capped at 3.5. 3 or 4 positive
    values: each log value's deviation from the median of the others, over max(log 2, 3 x their range), times 3.5."""
    if 3 <= len(x) <= 4 and min(x) > 0:
        lx = [math.log(v) for v in x]
        others = [[w for j, w in enumerate(lx) if j != i] for i in range(len(lx))]
        return np.array([3.5 * (v - float(np.median(o))) / max(math.log(2.0), 3 * (max(o) - min(o)))
                         for v, o in zip(lx, others, strict=True)])
    if 5 <= len(x) <= 9 and min(x) > 0:
        lx = [math.log(v) for v in x]
        mid = float(np.median(lx))
        order = sorted(range(len(lx)), key=lambda i: -abs(lx[i] - mid))  # stable: ties by index

        def scale(i: int) -> float:
            rest = [lx[j] for j in order[i:]]
            mean = sum(rest) / len(rest)
            sd = math.sqrt(sum((v - mean) ** 2 for v in rest) / (len(rest) - 1))
            return max(SMALL_N_WIDEN[len(x)] * sd, math.log1p(SMALL_N_FLOOR))

        steps = range(1, (len(x) - 1) // 2 + 1)
        k = max([i for i in steps if abs(lx[order[i - 1]] - mid) / scale(i) > 3.5], default=0)
        z = [(v - mid) / scale(max(k, 1)) for v in lx]
        return np.array([zi if i in order[:k] else max(-3.5, min(3.5, zi)) for i, zi in enumerate(z)])
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med)))
    scale = mad / 0.6745 if mad > 0 else 1.253314 * float(np.mean(np.abs(x - med)))
    scale = max(scale, (SMALL_N_FLOOR if len(x) < 10 else LARGE_N_FLOOR) * abs(med))
    return (x - med) / scale if scale > 0 else np.zeros(len(x))


def _samples(rng: np.random.Generator, n: int, m: int, kind: int) -> tuple[np.ndarray, np.ndarray]:
    if kind == 0:  # continuous, small shift
        return rng.lognormal(0, 0.1, n), rng.lognormal(0.05, 0.1, m)
    if kind == 1:  # rounded: some ties
        return np.round(rng.lognormal(3, 0.1, n)), np.round(rng.lognormal(3, 0.1, m))
    if kind == 2:  # three values: heavy ties
        return rng.integers(1, 4, n).astype(float), rng.integers(1, 4, m).astype(float)
    if kind == 3:  # extreme magnitudes
        return 1e300 * rng.lognormal(0, 0.1, n), 1e-300 * rng.lognormal(0, 0.1, m)
    if kind == 4:  # no overlap at all
        return rng.uniform(1, 2, n), rng.uniform(3, 4, m)
    return np.full(n, 7.0), np.full(m, 7.0)  # one value


# ------------------------------------------------------------------ Hodges-Lehmann
def test_hl_matches_brute_force_on_random_and_adversarial_samples():
    rng = np.random.default_rng(2024)
    sizes = [(1, 1), (1, 2), (2, 1), (2, 2), (1, 3), (3, 3), (3, 4), (4, 4), (2, 12), (5, 40), (39, 7)]
    sizes += [tuple(int(v) for v in rng.integers(1, 40, 2)) for _ in range(150)]
    for i, (n, m) in enumerate(sizes):
        h, p = _samples(rng, n, m, i % 6)
        got, (est, lo, hi) = hl_ratio(h, p), hl_reference(h, p)
        assert got.estimate == pytest.approx(est, rel=1e-12), (n, m, i % 6)
        assert (got.low is None) is (lo is None) and (got.high is None) is (hi is None), (n, m)
        if lo is not None:
            assert got.low == pytest.approx(lo, rel=1e-12) and got.high == pytest.approx(hi, rel=1e-12)
            assert got.low <= got.estimate <= got.high
        else:
            assert got.warnings
        # unsorted input and presorted input give the same numbers
        again = hl_ratio(np.sort(h), np.sort(p), presorted=True)
        assert (again.estimate, again.low, again.high) == (got.estimate, got.low, got.high)


@pytest.mark.parametrize("n,m,kind", [(1, 260_000, 0), (600, 501, 2), (700, 400, 1), (520, 520, 5), (900, 300, 4)])
def test_hl_large_cells_match_brute_force(n, m, kind):
    rng = np.random.default_rng(n + m + kind)
    h, p = _samples(rng, n, m, kind)
    assert n * m > DIRECT_LIMIT
    got, (est, lo, hi) = hl_ratio(h, p), hl_reference(h, p)
    assert got.estimate == pytest.approx(est, rel=1e-12)
    if lo is None:
        assert got.low is None
    else:
        assert got.low == pytest.approx(lo, rel=1e-12) and got.high == pytest.approx(hi, rel=1e-12)


def test_kth_pairwise_differences_with_duplicates_and_negatives_equals_sorting():
    rng = np.random.default_rng(5)
    x = np.sort(np.concatenate([np.full(300, -2.0), rng.normal(0, 3, 300), np.full(100, 1e6)]))
    y = np.sort(np.concatenate([np.zeros(250), rng.integers(-5, 5, 250).astype(float), np.full(50, -1e6)]))
    d = np.sort((y[None, :] - x[:, None]).ravel())
    nm = len(d)
    ks = np.unique(np.concatenate([[1, 2, nm - 1, nm, nm // 2, nm // 2 + 1], rng.integers(1, nm + 1, 20)]))
    assert np.array_equal(kth_pairwise_differences(x, y, ks), d[ks - 1])


def test_hl_interval_ranks_cover_at_least_nominal_exactly():
    """The normal-approximation Moses ranks, checked against the exact null distribution of U: for
    continuous data the interval [D_(c), D_(nm+1-c)] covers the true shift with probability
    1 - 2 P(U <= c - 1), which must not fall below 95% (and the interval must exist from 4 runs a side)."""
    z = float(sps.norm.ppf(0.975))
    for n in range(1, 11):
        for m in range(n, 11):
            nm = n * m
            c = math.floor(nm / 2 + 0.5 - z * math.sqrt(nm * (n + m + 1) / 12))
            has_ci = hl_ratio(np.arange(1.0, n + 1), np.arange(1.5, m + 1.5)).low is not None
            assert has_ci is (c >= 1), (n, m)
            if c >= 1:
                assert 1 - 2 * u_null_cdf(n, m)[c - 1] >= 0.95, (n, m, c)
            if n >= 4:
                assert has_ci, (n, m)


def test_hl_and_bca_refuse_non_finite_values():
    good = 100 * np.exp(np.random.default_rng(1).normal(0, 0.02, 20))
    for bad in (math.nan, math.inf):
        r = hl_ratio(good, np.append(good[:19], bad))
        assert r.estimate is None and r.low is None and r.warnings
        b = bca_ratio_of_medians(good, np.append(good[:19], bad), rng=np.random.default_rng(0))
        assert b.estimate is None and b.low is None and b.warnings


# ------------------------------------------------------------------ rank test
def test_mann_whitney_matches_scipy_auto():
    rng = np.random.default_rng(77)
    sizes = [(1, 1), (1, 2), (2, 2), (1, 30), (3, 3), (8, 8), (8, 9), (9, 9), (2, 40), (8, 200)]
    sizes += [tuple(int(v) for v in rng.integers(1, 30, 2)) for _ in range(200)]
    for i, (n, m) in enumerate(sizes):
        h, p = _samples(rng, n, m, i % 5)
        ours = mann_whitney(h, p)
        if ours.method == "degenerate":
            assert ours.p_value == 1.0 and ours.warnings
            continue
        ref = sps.mannwhitneyu(p, h, alternative="two-sided")  # scipy's own choice of exact/asymptotic
        ties = len(np.unique(np.concatenate([h, p]))) < n + m
        want = "exact" if min(n, m) <= 8 and not ties else "asymptotic"
        assert ours.method == want, (n, m)
        assert ours.u == ref.statistic
        assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300), (n, m, i % 5)
        assert 0.0 <= ours.p_value <= 1.0


def test_mann_whitney_refuses_non_finite_values():
    good = np.arange(1.0, 21.0)
    for bad in (math.nan, math.inf, -math.inf):
        r = mann_whitney(good, np.append(good[:19] + 0.5, bad))
        assert r.p_value is None and r.warnings


# ------------------------------------------------------------------ multiple comparisons
def test_holm_and_bh_match_reference_formulas_and_scipy():
    rng = np.random.default_rng(3)
    families = [[0.5], [1.0, 1.0], [0.0, 0.0, 1.0], [0.01, 0.01, 0.01, 0.04], [0.03, 0.01, 0.03, 0.5, 1.0]]
    families += [list(rng.uniform(size=int(k)) ** 3) for k in rng.integers(1, 60, 40)]
    families += [list(np.round(rng.uniform(size=30), 2)) for _ in range(10)]  # many ties
    for p in families:
        assert holm(p) == pytest.approx(holm_reference(p), rel=1e-12, abs=1e-15)
        assert bh(p) == pytest.approx(bh_reference(p), rel=1e-12, abs=1e-15)
        assert bh(p) == pytest.approx(list(sps.false_discovery_control(p, method="bh")), rel=1e-12)
        for adj in (holm(p), bh(p)):
            assert all(a >= q and 0.0 <= a <= 1.0 for a, q in zip(adj, p, strict=True))
            order = np.argsort(p, kind="stable")
            assert np.all(np.diff(np.array(adj)[order]) >= 0)  # monotone in p
        assert all(b <= h + 1e-15 for b, h in zip(bh(p), holm(p), strict=True))  # FDR never stricter


def test_corrections_skip_none_and_nan_without_counting_them():
    p = [0.01, None, 0.04, math.nan, 0.03]
    for f, ref in ((holm, holm_reference), (bh, bh_reference)):
        got = f(p)
        assert got[1] is None and got[3] is None
        want = ref([0.01, 0.04, 0.03])
        assert [got[0], got[2], got[4]] == pytest.approx(want)


# ------------------------------------------------------------------ bootstrap
def test_bca_is_deterministic_with_a_seed():
    rng = np.random.default_rng(8)
    h, p = 100 * np.exp(rng.normal(0, 0.03, 25)), 95 * np.exp(rng.normal(0, 0.03, 31))
    a = bca_ratio_of_medians(h, p, rng=np.random.default_rng(42))
    b = bca_ratio_of_medians(h, p, rng=np.random.default_rng(42))
    c = bca_ratio_of_medians(np.sort(h), np.sort(p), rng=np.random.default_rng(42), presorted=True)
    assert a == b == c
    assert a.estimate == pytest.approx(float(np.median(p) / np.median(h)), rel=1e-15)


@pytest.mark.parametrize("n,dist", [(20, "lognormal"), (12, "gamma"), (40, "exponential")])
def test_bca_and_hl_cover_the_true_ratio_about_95_percent(n, dist):
    """Seeded simulation, 500 samples: pod = truth x host in distribution, so the true ratio of
    medians (and the log shift HL estimates) is ``truth``; nominal 95% must cover it 92.5-97.5%."""
    rng = np.random.default_rng(n)
    truth, sims = 0.9, 500
    draw = {"lognormal": lambda k: np.exp(rng.normal(0, 0.05, k)), "gamma": lambda k: rng.gamma(4.0, 1.0, k),
            "exponential": lambda k: rng.exponential(1.0, k)}[dist]
    bca_hits = hl_hits = 0
    for _ in range(sims):
        h, p = 100 * draw(n), 100 * truth * draw(n)
        b = bca_ratio_of_medians(h, p, rng=rng)
        hl = hl_ratio(h, p)
        assert b.stable
        bca_hits += b.low <= truth <= b.high
        hl_hits += hl.low <= truth <= hl.high
    assert 0.925 <= bca_hits / sims <= 0.975
    assert 0.925 <= hl_hits / sims <= 0.975


@pytest.mark.parametrize("n,m", [(2, 2), (2, 3), (3, 3), (2, 9), (5, 5), (9, 9)])
def test_bca_below_minimum_runs_warns_and_stays_within_the_data(n, m):
    rng = np.random.default_rng(n * 10 + m)
    for _ in range(50):
        h, p = 100 * np.exp(rng.normal(0, 0.05, n)), 90 * np.exp(rng.normal(0, 0.05, m))
        b = bca_ratio_of_medians(h, p, rng=rng)
        assert not b.stable and any("fewer than 10 runs" in w for w in b.warnings)
        assert p.min() / h.max() <= b.low < b.high <= p.max() / h.min()
        assert b.low <= b.estimate <= b.high


def _cell(h: np.ndarray, p: np.ndarray, higher_is_better: bool, metric: str = "m") -> CellData:
    return CellData("campaign", "cluster", "node", "sysbench-cpu", "", metric, "unit", higher_is_better,
                    Side("host", h), Side("kubernetes", p))


def _row(h: np.ndarray, p: np.ndarray, higher_is_better: bool = True, *, seed: int = 0, threshold: float = 0.01):
    a = analyze(_cell(h, p, higher_is_better), threshold=threshold, seed=seed)
    return finalize(a, a.fields["p_value"], threshold=threshold, correction="holm")


@pytest.mark.parametrize("n", [2, 3])
def test_no_95_percent_interval_is_shown_where_the_data_cannot_give_one(n):
    """With 2 or 3 runs a side no distribution-free 95% interval exists (the widest one the data allow,
    [min pod / max host, max pod / min host], covers 67% and 90%); the unstable bootstrap interval must
    not be shown in its place (a runner with target_ci_width would stop the cell on it). Such a cell is
    INSUFFICIENT, which withholds any interval (podtax.flags.WITHHOLD_INFERENCE), and its sentence says why."""
    rng = np.random.default_rng(n)
    row = _row(100 * np.exp(rng.normal(0, 0.02, n)), 90 * np.exp(rng.normal(0, 0.02, n)))
    assert row.ratio is not None and row.ci_low is None and row.ci_high is None
    assert row.verdict == "inconclusive"
    assert "too few runs for an interval" in row.sentence, row.sentence


# ------------------------------------------------------------------ outliers, modes, drift
def test_modified_z_matches_reference():
    rng = np.random.default_rng(11)
    cases = [np.array([5.0, 5, 5, 5, 5, 9]), np.array([1.0, 1, 1, 1, 2, 3, 50]), np.full(7, 3.0)]
    cases += [np.array([1000.0, 1003, 998, 1001, 10000, 10000]), np.array([1000.0, 1003, 998, 1001, 500, 2000]),
              np.array([1000.0, 1003, 998, 1001, 997, 1002, 2000, 3000])]  # two strays (generalized ESD)
    cases += [np.array([1000.0, 1100, 905]), np.array([1000.0, 1020, 10000, 990]), np.array([1.0, 1, 1, 3]),
              np.array([0.0, 1, 2, 9])]  # 3 or 4 runs (stats/few_runs.py); a 0 keeps the MAD rule
    cases += [100 * np.exp(rng.normal(0, s, int(k))) for s, k in zip(rng.uniform(0.001, 0.3, 60),
                                                                         rng.integers(3, 60, 60), strict=True)]
    cases += [np.append(np.round(rng.normal(10, 1, 20)), 40.0) for _ in range(10)]
    for x in cases:
        want = modified_z_reference(x)
        assert modified_z(x) == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert list(outlier_indices(x)) == list(np.flatnonzero(np.abs(want) > cutoff_for(len(x))))  # 3.5, 6 from 10


def test_pettitt_and_drift_match_definition():
    rng = np.random.default_rng(21)
    for i in range(60):
        n = int(rng.integers(10, 50))
        x = 100 * np.exp(rng.normal(0, 0.02, n))
        if i % 3 == 0:
            x[n // 2 :] *= 0.95  # a step
        if i % 4 == 0:
            x = np.round(x)  # ties
        idx, p = pettitt(x)
        ridx, rp = pettitt_reference(x)
        assert idx == ridx and p == pytest.approx(rp, rel=1e-9, abs=1e-300)
        assert pettitt(x, np.sort(x)) == (idx, pytest.approx(p, rel=1e-12, abs=1e-300))
        d = detect_drift(x, 0.01)
        shift = float(np.median(x[idx:]) / np.median(x[:idx]) - 1)
        assert d.index == idx and d.shift == pytest.approx(shift)
        trend_p = mann_kendall_reference(x)
        assert d.trend_p == pytest.approx(trend_p, rel=1e-9, abs=1e-300)
        total = float(sps.theilslopes(x).slope) / float(np.median(x)) * (n - 1)
        alpha = DRIFT_ALPHA / 2  # both tests run up to 50 runs
        assert d.drift is ((p < alpha and abs(shift) >= 0.01) or (trend_p < alpha and abs(total) >= 0.01))


def mann_kendall_reference(x: np.ndarray) -> float:
    """Kendall's tau of x against run order: scipy's exact p without ties; with ties S by its definition
    and the normal approximation with the tie-corrected variance and a continuity correction."""
    n = len(x)
    if len(set(x)) == n:
        return float(sps.kendalltau(np.arange(n), x, method="exact").pvalue)
    s = sum(np.sign(x[j] - x[i]) for i in range(n) for j in range(i + 1, n))
    ties = [c for c in np.unique(x, return_counts=True)[1] if c > 1]
    var = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in ties)) / 18
    return float(2 * sps.norm.sf((abs(s) - 1) / math.sqrt(var)))


def test_trend_test_flags_a_monotone_drift_pettitt_cannot_see():
    x = np.linspace(1000.0, 850.0, 10)  # the host fell steadily by 15% over 10 runs
    d = detect_drift(x, 0.01)
    assert d.p_value > 0.06 and d.trend_p == pytest.approx(2 / math.factorial(10)) and d.drift
    assert d.total == pytest.approx(-0.15 * 1000 / 925, rel=1e-9)  # Theil-Sen over the median


@pytest.mark.parametrize("n", [10, 13, 20, 40])
def test_drift_false_positive_rate_stays_at_alpha(n):
    rng = np.random.default_rng(n)
    hits = sum(detect_drift(1000 * np.exp(rng.normal(0, 0.01, n)), 0.01).drift for _ in range(3000))
    assert hits / 3000 <= DRIFT_ALPHA


def test_bimodality_coefficient_and_dip_match_their_definitions():
    import diptest

    rng = np.random.default_rng(31)
    for i in range(40):
        n = int(rng.integers(10, 80))
        if i % 2:
            k = n // 2
            x = np.concatenate([100 * np.exp(rng.normal(0, 0.02, k)), 160 * np.exp(rng.normal(0, 0.02, n - k))])
        else:
            x = 100 * np.exp(rng.normal(0, 0.1, n))
        g1, g2 = sps.skew(x, bias=False), sps.kurtosis(x, bias=False)
        bc = (g1**2 + 1) / (g2 + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))
        assert bimodality_coefficient(x) == pytest.approx(bc, rel=1e-9)
        u = check_unimodality(x)
        dip, p = diptest.diptest(x)
        assert (u.dip, u.dip_p) == (pytest.approx(dip), pytest.approx(p))
        assert 0 < u.dip <= 0.25 and 0 <= u.dip_p <= 1
        steps = np.diff(np.unique(x))
        rounding = steps.max() <= 1.5 * steps.min()  # no gap wider than 1.5 printed steps
        dip_rule = p < DIP_ALPHA and (bc > BC_THRESHOLD or p < 0.01)
        assert u.bimodal is bool((dip_rule or u.separated is not None) and not rounding)
        assert u.separated is None or not dip_rule  # the gap rule only where the dip test did not fire


@pytest.mark.parametrize("x,bimodal", [
    # two modes 10% apart at 10 runs: Sarle's coefficient stays under 5/9, the dip test alone is strong
    ([100.9, 89.2, 99.1, 90.8, 101.0, 89.5, 98.8, 90.6, 100.3, 91.0], True),  # coefficient 0.51, dip p 0.0001
    # sysbench latencies at their 0.01 ms resolution: two adjacent printed levels are not two modes
    ([1.05, 1.06, 1.05, 1.06, 1.05, 1.06, 1.06, 1.05, 1.05, 1.06], False),
    ([1.05, 1.06, 1.07, 1.05, 1.07, 1.05, 1.07, 1.06, 1.05, 1.07, 1.05, 1.07], False),
    ([1.00, 1.01, 1.00, 1.01, 1.00, 1.50, 1.51, 1.50, 1.51, 1.50], True),  # at that resolution, a real gap
])
def test_bimodal_at_ten_runs_and_at_the_printing_resolution(x, bimodal):
    assert check_unimodality(np.array(x)).bimodal is bimodal


@pytest.mark.parametrize("x", [[], [5.0], [5.0, 6.0], [5.0] * 2, [5.0] * 30])
def test_tiny_and_constant_sides_are_handled(x):
    x = np.array(x)
    d, u = detect_drift(x), check_unimodality(x)
    assert not d.drift and d.p_value is None and not u.bimodal and u.dip_p is None
    assert len(outlier_indices(x)) == 0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_refused_not_used(bad):
    x = 100 * np.exp(np.random.default_rng(4).normal(0, 0.02, 30))
    x[17] = bad
    d = detect_drift(x, 0.01)
    assert d.p_value is None and not d.drift
    assert detect_drift(x, 0.01, np.sort(x)) == d
    u = check_unimodality(x)
    assert u.dip_p is None and u.bc is None and not u.bimodal
    assert check_unimodality(x, np.sort(x)) == u
    assert 17 in outlier_indices(x)  # reported, and the other values are scored among themselves
    assert list(outlier_indices(x)) == [17]


# ------------------------------------------------------------------ verdicts, end to end
@pytest.mark.parametrize("higher_is_better,effect", [(True, 0.9), (False, 1.1)])
def test_a_planted_10_percent_loss_reads_slower_with_the_truth_inside(higher_is_better, effect):
    """Throughput 10% lower and latency 10% higher are both "slower" (n = 20 a side, 2% noise)."""
    rng = np.random.default_rng(7)
    covered = 0
    for seed in range(30):
        h, p = 100 * np.exp(rng.normal(0, 0.02, 20)), 100 * effect * np.exp(rng.normal(0, 0.02, 20))
        row = _row(h, p, higher_is_better, seed=seed)
        assert row.verdict == "slower", row.sentence
        assert "slower" in row.sentence
        covered += row.ci_low <= effect <= row.ci_high
        assert (row.ratio < 1) is higher_is_better
    assert covered >= 26
    # the mirror image: pod better by 10% on each kind of metric
    row = _row(100 * np.exp(rng.normal(0, 0.02, 20)), 100 / effect * np.exp(rng.normal(0, 0.02, 20)),
               higher_is_better)
    assert row.verdict == "faster"


@pytest.mark.parametrize("threshold", [0.01, 0.0])
def test_no_effect_claims_a_difference_at_most_alpha_of_the_time(threshold):
    rng = np.random.default_rng(int(threshold * 1000) + 1)
    sims, claims = 300, 0
    for seed in range(sims):
        h, p = 100 * np.exp(rng.normal(0, 0.03, 20)), 100 * np.exp(rng.normal(0, 0.03, 20))
        claims += _row(h, p, bool(seed % 2), seed=seed, threshold=threshold).verdict in ("faster", "slower")
    assert claims / sims <= 0.05
