"""Small static SVG plots for the HTML report: strip plots, runs over time, CDFs, heatmap colours.

Pure functions returning SVG markup. No JavaScript: the page works offline and renders the same in
every browser and in a saved file. Colours are Okabe-Ito (colour-blind safe) and every series also
has its own marker shape and a text label, so nothing depends on colour alone.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from datetime import datetime
from html import escape

from podtax.sides import COUNT_UNITS

from podtax_analyzer.wording import fmt_value

# Okabe-Ito: blue, orange, bluish green, vermillion, reddish purple, sky blue
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9")
SHAPES = ("circle", "triangle", "square", "diamond")
GOOD, BAD = (0x00, 0x72, 0xB2), (0xD5, 0x5E, 0x00)


def fmt(v: float, unit: str = "") -> str:
    """As wording.fmt_value says it (four significant digits, no exponent; a count as a count: 5.5), except a
    value of 1e9 or more that is not a count: three significant digits with an exponent, to fit a label."""
    if unit not in COUNT_UNITS and math.isfinite(v) and abs(v) >= 1e9:
        return f"{v:.3g}"
    return fmt_value(v, unit)


def heat_colour(ratio: float | None, higher_is_better: bool, span: float = 0.10) -> str:
    """Background of a matrix cell: white at ratio 1, towards blue when the candidate is better,
    towards vermillion when worse, full strength at +-``span`` (log scale); grey when withheld."""
    if ratio is None or not 0 < ratio < math.inf:  # NaN too
        return "#e0e0e0"
    g = math.log(ratio) * (1 if higher_is_better else -1)
    t = min(abs(g) / math.log1p(span), 1.0) * 0.6  # at most 60% so black text stays readable
    target = GOOD if g > 0 else BAD
    rgb = (round(255 + (c - 255) * t) for c in target)
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _marker(shape: str, x: float, y: float, cls: str, r: float = 4.0) -> str:
    """One marker; colour and outline come from the enclosing side group (keeps big plots small)."""
    if shape == "circle":
        return f'<circle class="{cls}" cx="{x:.1f}" cy="{y:.1f}" r="{r}"/>'
    if shape == "square":
        return f'<rect class="{cls}" x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}"/>'
    if shape == "diamond":
        pts = f"{x:.1f},{y - r - 1:.1f} {x + r + 1:.1f},{y:.1f} {x:.1f},{y + r + 1:.1f} {x - r - 1:.1f},{y:.1f}"
    else:
        pts = f"{x:.1f},{y - r - 1:.1f} {x + r + 1:.1f},{y + r:.1f} {x - r - 1:.1f},{y + r:.1f}"
    return f'<polygon class="{cls}" points="{pts}"/>'


def _group(k: int, title: str) -> str:
    """Opens the group of side ``k``: its colour, outline and a tooltip naming it."""
    return (f'<g class="side-{k}" fill="{PALETTE[k % len(PALETTE)]}" fill-opacity="0.75" stroke="#222" '
            f'stroke-width="0.6"><title>{escape(title)}</title>')


def _scale(lo: float, hi: float, a: float, b: float):
    if hi <= lo:
        lo, hi = lo - 1 if lo == 0 else lo * 0.99, hi + 1 if hi == 0 else hi * 1.01
    return lambda v: a + (v - lo) / (hi - lo) * (b - a), lo, hi


MAX_POINTS = 400  # per side and plot; more runs are thinned (and the plot says so)


def thin(values: Sequence, limit: int = MAX_POINTS) -> list:
    """At most ``limit`` items, evenly spaced over the sequence (all of them when it is short)."""
    n = len(values)
    if n <= limit:
        return list(values)
    return [values[round(i * (n - 1) / (limit - 1))] for i in range(limit)]


def _jitter(i: int) -> float:
    """Deterministic offset in [-1, 1] (golden-ratio sequence), so the plot is the same every time."""
    return ((i * 0.6180339887) % 1.0) * 2 - 1


def strip_plot(series: Sequence[tuple[str, Sequence[float]]], unit: str, *, width: int = 560,
               modes: Sequence[Sequence[float]] = ()) -> str:
    """One row per side: every run as a marker, the side's median as a bar with its value written, or for a side
    with modes (``modes[k]``: a BIMODAL side's mode medians) a bar at each mode's median."""
    row_h, left, right, top = 46, 110, 20, 10
    height = top + row_h * len(series) + 34
    values = [v for _, vals in series for v in vals]
    if not values:
        return ""
    x, lo, hi = _scale(min(values), max(values), left, width - right)
    parts = [f'<svg class="strip" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="runs per side">']
    for k, (label, vals) in enumerate(series):
        cy = top + row_h * k + row_h / 2
        shape = SHAPES[k % len(SHAPES)]
        shown = thin(sorted(vals))
        note = "" if len(shown) == len(vals) else f", {len(shown)} quantiles shown"
        parts.append(f'<text x="4" y="{cy + 4:.1f}" font-size="12">{escape(label)} (n={len(vals)}{note})</text>')
        parts.append(_group(k, label))
        parts.extend(_marker(shape, x(v), cy + _jitter(i) * 12, "pt") for i, v in enumerate(shown))
        parts.append("</g>")
        if vals:
            med = sorted(vals)[len(vals) // 2] if len(vals) % 2 else \
                (sorted(vals)[len(vals) // 2 - 1] + sorted(vals)[len(vals) // 2]) / 2
            bars = [("mode", m) for m in modes[k]] if k < len(modes) and modes[k] else [("median", med)]
            for name, at in bars:
                mx = x(at)
                parts.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{cy - 18:.1f}" y2="{cy + 18:.1f}" '
                             f'stroke="#000" stroke-width="2.5"/>')
                parts.append(f'<text x="{mx + 4:.1f}" y="{cy - 14:.1f}" font-size="11">{name} {fmt(at, unit)}</text>')
    axis_y = top + row_h * len(series) + 6
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{axis_y}" y2="{axis_y}" stroke="#444"/>')
    for v in (lo, (lo + hi) / 2, hi):
        parts.append(f'<text x="{x(v):.1f}" y="{axis_y + 16}" font-size="11" text-anchor="middle">'
                     f'{fmt(v, unit)}</text>')
    parts.append(f'<text x="{width - right}" y="{axis_y + 28}" font-size="11" text-anchor="end">'
                 f'{escape(unit)}</text></svg>')
    return "".join(parts)


def time_plot(series: Sequence[tuple[str, Sequence[tuple[datetime, float]]]], unit: str, *,
              width: int = 560, height: int = 150) -> str:
    """Runs in time order: x = start time, y = value; one marker shape and colour per side."""
    points = [p for _, pts in series for p in pts if p[0] is not None]
    if not points:
        return ""
    left, right, top, bottom = 60, 20, 10, 36
    t0 = min(p[0] for p in points)
    secs = [(p[0] - t0).total_seconds() for p in points]
    x, _, t_hi = _scale(0.0, max(secs) or 1.0, left, width - right)
    y, lo, hi = _scale(min(p[1] for p in points), max(p[1] for p in points), height - bottom, top)
    parts = [f'<svg class="timeline" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="runs over time">',
             f'<line x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}" stroke="#444"/>',
             f'<line x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}" stroke="#444"/>']
    for v in (lo, hi):
        parts.append(f'<text x="{left - 4}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">{fmt(v, unit)}</text>')
    parts.append(f'<text x="{left}" y="{height - bottom + 14}" font-size="11">{t0:%Y-%m-%d %H:%M:%S} UTC</text>')
    parts.append(f'<text x="{width - right}" y="{height - bottom + 14}" font-size="11" text-anchor="end">'
                 f'+{fmt(t_hi)} s</text>')
    legend_x = left
    for k, (label, pts) in enumerate(series):
        shape = SHAPES[k % len(SHAPES)]
        parts.append(_group(k, label))
        parts.extend(_marker(shape, x((t - t0).total_seconds()), y(v), "tp", r=3.5) for t, v in thin(pts)
                     if t is not None)
        text = label if len(pts) <= MAX_POINTS else f"{label} (every {len(pts) / MAX_POINTS:.1f}th of {len(pts)})"
        parts.append(_marker(shape, legend_x + 4, height - 8, "legend", r=3.5) + "</g>")
        parts.append(f'<text x="{legend_x + 12}" y="{height - 4}" font-size="11">{escape(text)}</text>')
        legend_x += 30 + 7 * len(text)
    parts.append(f'<text x="{width - right}" y="{height - 4}" font-size="11" text-anchor="end">'
                 f'{escape(unit)}</text></svg>')
    return "".join(parts)


def cdf_plot(series: Sequence[tuple[str, Sequence[float]]], unit: str, *, width: int = 560,
             height: int = 200, bounds: dict[str, Sequence[float]] | None = None,
             late: dict[str, Sequence[float]] | None = None) -> str:
    """Empirical CDFs as step lines, one dash pattern, colour and label per series; x = value. ``bounds``: the
    values of a series that are only lower bounds (objects given up, at their given-up time), each drawn as an
    open circle on its step (class "given-up"): the true point lies further right. ``late``: those that are only
    upper bounds (ends seen only by a re-list after a dropped watch, at the time seen), each an open square
    (class "late"): the true point lies further left."""
    values = [v for _, vals in series for v in vals]
    if not values:
        return ""
    left, right, top, bottom = 50, 20, 10, 40
    x, lo, hi = _scale(min(values), max(values), left, width - right)
    y, _, _ = _scale(0.0, 1.0, height - bottom, top)
    dashes = ("", "6 3", "2 2", "8 2 2 2")
    parts = [f'<svg class="cdf" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="cumulative distribution">',
             f'<line x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}" stroke="#444"/>',
             f'<line x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}" stroke="#444"/>',
             f'<text x="{left - 4}" y="{y(1) + 4:.1f}" font-size="11" text-anchor="end">1</text>',
             f'<text x="{left - 4}" y="{y(0.5) + 4:.1f}" font-size="11" text-anchor="end">0.5</text>']
    for v in (lo, hi):
        parts.append(f'<text x="{x(v):.1f}" y="{height - bottom + 14}" font-size="11" '
                     f'text-anchor="middle">{fmt(v, unit)}</text>')
    for k, (label, vals) in enumerate(series):
        s = sorted(vals)
        if not s:
            continue
        pts, prev = [f"{x(s[0]):.1f},{y(0):.1f}"], 0.0
        for i, v in enumerate(s):
            pts.append(f"{x(v):.1f},{y(prev):.1f}")
            prev = (i + 1) / len(s)
            pts.append(f"{x(v):.1f},{y(prev):.1f}")
        colour = PALETTE[k % len(PALETTE)]
        dash = f' stroke-dasharray="{dashes[k % len(dashes)]}"' if dashes[k % len(dashes)] else ""
        parts.append(f'<polyline class="cdf-line" fill="none" stroke="{colour}" stroke-width="2"{dash} '
                     f'points="{" ".join(pts)}"><title>{escape(label)}</title></polyline>')
        for v in (bounds or {}).get(label, ()):
            parts.append(f'<circle class="given-up" cx="{x(v):.1f}" cy="{y((s.index(v) + 1) / len(s)):.1f}" r="4" '
                         f'fill="white" stroke="{colour}" stroke-width="2"><title>{escape(label)}: given up at '
                         f'{fmt(v)} {escape(unit)} (a lower bound)</title></circle>')
        for v in (late or {}).get(label, ()):
            top = y(bisect.bisect_right(s, v) / len(s))
            parts.append(f'<rect class="late" x="{x(v) - 3.5:.1f}" y="{top - 3.5:.1f}" width="7" height="7" '
                         f'fill="white" stroke="{colour}" stroke-width="2"><title>{escape(label)}: seen at {fmt(v)} '
                         f'{escape(unit)} after a dropped watch (an upper bound)</title></rect>')
        ly = height - 6
        lx = left + 150 * k
        parts.append(f'<line x1="{lx}" x2="{lx + 24}" y1="{ly - 4}" y2="{ly - 4}" stroke="{colour}" '
                     f'stroke-width="2"{dash}/><text x="{lx + 28}" y="{ly}" font-size="11">'
                     f'{escape(label)} (n={len(s)})</text>')
    parts.append(f'<text x="{width - right}" y="{height - bottom + 26}" font-size="11" text-anchor="end">'
                 f'{escape(unit)}</text></svg>')
    return "".join(parts)
