"""Multiple-comparison corrections within one family of hypotheses.

The family (chosen by podtax_analyzer.comparisons) is one primary metric per cell; secondary
metrics form a second family, corrected on their own. Metrics with no variance are not tested and
so are not hypotheses here (their p-value is None), nor are cells with too few runs (INSUFFICIENT, whose
p-value cell_analysis withholds).

``holm``: Holm-Bonferroni step-down; controls the family-wise error rate (chance of any false
"different" in the family) at alpha. ``bh``: Benjamini-Hochberg step-up; controls the false
discovery rate (expected share of false "different" among those called different), computed by
``scipy.stats.false_discovery_control``.
Both return adjusted p-values in [0, 1], in the input order; None entries stay None and are not
counted as hypotheses.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

METHODS = ("holm", "bh")


def _split(p: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    idx = np.array([i for i, v in enumerate(p) if v is not None and np.isfinite(v)], dtype=np.int64)
    vals = np.array([p[i] for i in idx], dtype=float)
    return idx, vals


def _merge(p: Sequence[float | None], idx: np.ndarray, adj: np.ndarray) -> list[float | None]:
    out: list[float | None] = [None] * len(p)
    for i, v in zip(idx, adj, strict=True):
        out[int(i)] = float(v)
    return out


def holm(p: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values: the k-th smallest of m is multiplied by (m - k + 1), then
    made monotone. Written out (six lines) because scipy has no Holm and statsmodels'
    ``multipletests`` would add a large dependency for it; checked against the textbook example
    in tests/analysis/test_analysis_stats.py."""
    idx, vals = _split(p)
    m = len(vals)
    if m == 0:
        return [None] * len(p)
    order = np.argsort(vals, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * vals[order])
    adj = np.empty(m)
    adj[order] = np.minimum(stepped, 1.0)
    return _merge(p, idx, adj)


def bh(p: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg step-up adjusted p-values (q-values), by scipy."""
    idx, vals = _split(p)
    if len(vals) == 0:
        return [None] * len(p)
    from scipy.stats import false_discovery_control  # lazy: ~65 MB an analyzer that only stores never loads

    return _merge(p, idx, false_discovery_control(vals, method="bh"))


def adjust(p: Sequence[float | None], method: str = "holm") -> list[float | None]:
    """Adjust p-values with ``method`` ("holm" or "bh"); raises ValueError for another name."""
    if method == "holm":
        return holm(p)
    if method == "bh":
        return bh(p)
    raise ValueError(f"unknown correction {method!r}; use one of {', '.join(METHODS)}")
