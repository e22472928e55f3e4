"""Number formatting shared by every sentence, so a number in a sentence can be found in the table
with the same rounding (tests check that)."""

from __future__ import annotations

import math

from podtax.pvalue import p_digits
from podtax.sides import COUNT_UNITS


def fmt_ratio(r: float) -> str:
    """A candidate/baseline ratio (pod/host, nomad/kubernetes), three decimals: 0.971."""
    return f"{r:.3f}"


def fmt_pct(x: float) -> str:
    """A percentage given as a fraction (0.029 -> "2.9"), one decimal, no sign, no % sign."""
    return f"{abs(x) * 100:.1f}"


def fmt_value(v: float, unit: str = "") -> str:
    """A metric value with four significant digits and no exponent: 130.2, 12346, 0.01234; a count (``unit`` in
    podtax.sides.COUNT_UNITS) as a count when it is whole or a half (the median of an even number of runs): 11, 5.5."""
    if unit in COUNT_UNITS and math.isfinite(v) and float(2 * v).is_integer():
        return f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}"
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    digits = max(0, 3 - math.floor(math.log10(abs(v))))
    return f"{v:.{digits}f}"


def fmt_p(p: float) -> str:
    """A p-value: "< 0.0001" or four decimals (more when it would read as ALPHA: podtax.pvalue)."""
    return "< 0.0001" if p < 0.0001 else p_digits(p, ".4f")


def p_text_of(p: float) -> str:
    """"p < 0.0001" or "p = 0.0123" (fmt_p)."""
    return "p < 0.0001" if p < 0.0001 else f"p = {fmt_p(p)}"


def fmt_share(s: float) -> str:
    """A share in [0, 1] as a whole percentage: 0.481 -> "48"."""
    return f"{s * 100:.0f}"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def side_name(env: str, pair: tuple[str, str] = ("host", "kubernetes")) -> str:
    """How a sentence names a side: host and pod for the pod tax, else the environment's own name."""
    if pair == ("host", "kubernetes"):
        return "host" if env == "host" else "pod"
    return env or "other side"


def ratio_name(pair: tuple[str, str]) -> str:
    """'pod/host', 'nomad/kubernetes': candidate over baseline."""
    return f"{side_name(pair[1], pair)}/{side_name(pair[0], pair)}"
