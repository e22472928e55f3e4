"""Mann-Whitney U rank test, pod against host (two-sided)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.stats import mannwhitneyu


@dataclass(frozen=True)
class RankTest:
    """Result of the two-sided Mann-Whitney U test.

    p_value: probability in [0, 1] of a rank difference at least this large if both sides came
        from the same distribution; None when not computable (a side with no runs).
    u: the U statistic of the pod sample (0 .. n_pod * n_host).
    method: "exact" (a side with <= 8 runs and no ties) or "asymptotic".
    warnings: sentences, e.g. when every value is identical.
    """

    p_value: float | None
    u: float | None
    method: str
    warnings: tuple[str, ...] = field(default_factory=tuple)


def mann_whitney(host: np.ndarray, pod: np.ndarray) -> RankTest:
    """Two-sided Mann-Whitney U test of pod vs host values (any unit, same on both sides)."""
    h = np.asarray(host, dtype=float)
    p = np.asarray(pod, dtype=float)
    if len(h) == 0 or len(p) == 0:
        return RankTest(None, None, "none", ("a side has no runs",))
    if np.ptp(np.concatenate([h, p])) == 0:
        return RankTest(1.0, len(h) * len(p) / 2.0, "degenerate", ("every value is identical",))
    ties = len(np.unique(np.concatenate([h, p]))) < len(h) + len(p)
    method = "exact" if min(len(h), len(p)) <= 8 and not ties else "asymptotic"
    res = mannwhitneyu(p, h, alternative="two-sided", method=method)
    return RankTest(float(res.pvalue), float(res.statistic), method)
