"""A cell's two modes, when a side is bimodal (stats/modes.py): how each side splits, the modes' text where a median
would be shown, and whether the two modes are rather a drift or too close to matter."""

from __future__ import annotations

import numpy as np

from podtax_analyzer.celldata import CellData
from podtax_analyzer.report_models import CellModes, ModeOut, SideModes
from podtax_analyzer.stats.drift import Drift
from podtax_analyzer.stats.modes import describe_modes
from podtax_analyzer.wording import fmt_value


def modes_of(cell: CellData, checks: dict, splits: dict[str, float | None]
             ) -> tuple[CellModes | None, dict | None, dict[str, float]]:
    """The modes of each side and the boundary each side is split at (stats/modes.py: a bimodal side's
    own, from ``splits``; the other side's when only one is bimodal)."""
    own = {env: b for env, b in splits.items() if checks[env].bimodal and b is not None}
    if not own:
        return None, None, {}
    shared = next(iter(own.values()))
    at = {env: own.get(env, shared) for env in (cell.baseline, cell.candidate)}
    modes = {cell.baseline: describe_modes(cell.host.values, at[cell.baseline]),
             cell.candidate: describe_modes(cell.pod.values, at[cell.candidate])}

    def side(env: str) -> SideModes:
        c = checks.get(env)
        return SideModes(bimodal=bool(c and c.bimodal), dip_p=c.dip_p if c else None,
                         bimodality_coefficient=c.bc if c else None, boundary=at[env],
                         modes=[ModeOut(label=m.label, n=m.n, share=m.share, median=m.median) for m in modes[env]])

    cell_modes = CellModes(boundary=at[cell.baseline], host=side(cell.baseline), pod=side(cell.candidate))
    return cell_modes, modes, at


def modes_text(side: SideModes | None, unit: str = "") -> str | None:
    """A bimodal side's two modes where its median would be shown: "128.3 (n=6) | 182.6 (n=6)", each mode's
    median and runs, low first (the split of stats/modes.py, as the BIMODAL flag's); None for any other side."""
    if side is None or not side.bimodal:
        return None
    return " | ".join(f"{fmt_value(m.median, unit)} (n={m.n})" for m in side.modes if m.median is not None)


def median_place(side: SideModes, unit: str = "") -> str | None:
    """Where a bimodal side's median lies: "between the modes" (as many runs in each: the two middle runs are the
    low mode's top and the high mode's bottom) or "inside the 159.9 mode" (the larger mode holds the middle run)."""
    low, high = side.modes if len(side.modes) == 2 else (None, None)
    if low is None or high is None or not side.bimodal:
        return None
    if low.n == high.n:
        return "between the modes"
    inside = low if low.n > high.n else high
    return f"inside the {fmt_value(inside.median, unit)} mode" if inside.median is not None else None


def modes_gap(values: np.ndarray, boundary: float | None) -> float | None:
    """How far apart a side's two modes are (their medians, as a fraction of the lower one), split at its
    two_means_boundary; infinite when the lower mode's median is 0 or less (no fraction of it says the gap)."""
    if boundary is None:
        return None
    low, high = (m.median for m in describe_modes(values, boundary))
    if low is None or high is None:
        return None
    return high / low - 1.0 if low > 0 else float("inf")


def modes_are_drift(values: np.ndarray, d: Drift, boundary: float | None) -> bool:
    """True when a two-mode split (at the side's two_means_boundary) coincides (>= 90% of runs) with a drift's
    before/after split."""
    if not d.drift or d.index is None or boundary is None:
        return False
    by_value = values >= boundary
    by_time = np.arange(len(values)) >= d.index
    agree = float(np.mean(by_value == by_time))
    return max(agree, 1.0 - agree) >= 0.9
