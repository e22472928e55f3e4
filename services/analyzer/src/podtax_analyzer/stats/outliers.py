"""Outliers by the modified z-score (Iglewicz and Hoaglin): reported, never dropped.

M_i = 0.6745 (x_i - median) / MAD, where MAD is the median absolute deviation. |M_i| > 3.5
marks an outlier. When more than half the values are identical (MAD = 0) the mean absolute
deviation times 1.2533 stands in for MAD / 0.6745 (both estimate sigma for normal data);
when that is zero too, no value is an outlier.
"""

from __future__ import annotations

import numpy as np

CUTOFF = 3.5


def modified_z(x: np.ndarray) -> np.ndarray:
    """Modified z-scores of x (dimensionless, same shape; zeros when the spread is zero)."""
    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        return np.zeros(0)
    med = np.median(x)
    dev = np.abs(x - med)
    mad = np.median(dev)
    if mad > 0:
        return 0.6745 * (x - med) / mad
    meanad = dev.mean()
    if meanad > 0:
        return (x - med) / (1.253314 * meanad)
    return np.zeros(len(x))


def modified_z_within(x: np.ndarray, boundary: float | None = None) -> np.ndarray:
    """Modified z-scores computed within each mode when a mode ``boundary`` is given (values below
    it and the rest scored separately), so a second mode is not mistaken for outliers."""
    x = np.asarray(x, dtype=float)
    if boundary is None:
        return modified_z(x)
    z = np.zeros(len(x))
    for mask in (x < boundary, x >= boundary):
        z[mask] = modified_z(x[mask])
    return z


def outlier_indices(x: np.ndarray, cutoff: float = CUTOFF, boundary: float | None = None) -> np.ndarray:
    """Indices (into x) of values whose |modified z-score| exceeds ``cutoff`` (default 3.5);
    scored within each mode when ``boundary`` is given. Fewer than 3 values: none."""
    if len(x) < 3:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.abs(modified_z_within(x, boundary)) > cutoff)
