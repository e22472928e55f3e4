"""How a p-value is written, the same in every output (report sentences, HTML, CLI tables, podtax compare).

A verdict needs p < ALPHA, so a p written as ALPHA would read as on the line whichever side it is on: at two
significant digits 0.0496 (significant) and 0.0504 (not) both read "0.05", at four decimals 0.04996 reads
"0.0500" beside a significant verdict. Such a p gets more digits until it no longer rounds onto ALPHA.
"""

from __future__ import annotations

ALPHA = 0.05  # the significance level of every verdict (podtax_analyzer.stats.verdict)


def p_digits(p: float, spec: str) -> str:
    """``p`` formatted by ``spec`` ('.4f', '.2g'), with one more digit at a time while it reads as ALPHA but is
    not: 0.0496 at '.2g' -> '0.0496', 0.04996 at '.4f' -> '0.04996'."""
    kind, digits = spec[-1], int(spec[1:-1])
    text = format(p, spec)
    while p != ALPHA and float(text) == ALPHA and digits < 17:
        digits += 1
        text = format(p, f".{digits}{kind}")
    return text
