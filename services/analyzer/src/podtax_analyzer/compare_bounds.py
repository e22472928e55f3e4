"""podtax compare's compared figures that are only bounds: a median resting on objects given up while waiting
(LOWER_BOUND) is a lower one, on figures timed after a dropped watch (WATCH_GAP) or holding a retry's wait (RETRIED)
an upper one (stats/verdict.py's rule), and why a change's verdict is then withheld."""

from __future__ import annotations

from podtax.flags import bound_mark

from podtax_analyzer.compare_models import BoundWay
from podtax_analyzer.report_models import CellComparison
from podtax_analyzer.stats.verdict import (
    AT_LEAST,
    AT_MOST,
    EXACT,
    FASTER,
    NO_DIFFERENCE,
    SLOWER,
    quotient_bound,
    side_bound,
)
from podtax_analyzer.wording import fmt_value

WORDS = {FASTER: "improved", SLOWER: "worsened", NO_DIFFERENCE: NO_DIFFERENCE}  # a verdict of a change


def way_of(bound: frozenset[int]) -> BoundWay | None:
    """How a true compared figure may lie from the shown one (bound_of), in words; None when it is exact."""
    if len(bound) == 2:
        return "either way"
    return "at least" if AT_LEAST in bound else "at most" if AT_MOST in bound else None


def _figures(c: CellComparison, one: str | None) -> list[tuple[str, float | None, frozenset[int]]]:
    """(environment, median, bound) of each compared figure of ``c`` that is only a bound: a lower one
    (LOWER_BOUND), an upper one (WATCH_GAP) or both (stats/verdict.py's side_bound)."""
    sides = [(c.baseline, c.host_median, side_bound(c.host_lower_bound, c.host_upper_bound)),
             (c.candidate, c.pod_median, side_bound(c.pod_lower_bound, c.pod_upper_bound))]
    return [(env, median, bound) for env, median, bound in sides if bound and (one is None or env == one)]


def bound_of(c: CellComparison, one: str | None) -> frozenset[int]:
    """How the true compared figure of ``c`` may lie from the shown one: its median (``one``) or its ratio."""
    bounds = {env: bound for env, _, bound in _figures(c, one)}
    if one is not None:
        return bounds.get(one, EXACT)
    return quotient_bound(bounds.get(c.candidate, EXACT), bounds.get(c.baseline, EXACT))


# why a figure is only a bound: LOWER_BOUND, WATCH_GAP or RETRIED's held
_CAUSES = {AT_LEAST: ("a lower", "objects never finished"),
           AT_MOST: ("an upper", "timed after a dropped watch or holding a retry's wait")}


def bound_why_of(cells: dict[str, CellComparison], one: str | None, bound: frozenset[int], withheld: str) -> str:
    """Why a change's verdict (``withheld``) is not given: a compared figure is only a lower or an upper bound."""
    figures = [f"{name}'s {env} {c.metric} is only {' and '.join(_CAUSES[b][0] for b in sorted(ways, reverse=True))} "
               f"bound ({bound_mark(AT_LEAST in ways, AT_MOST in ways)}{fmt_value(m, c.unit)} {c.unit}: "
               f"{', '.join(_CAUSES[b][1] for b in sorted(ways, reverse=True))})"
               for name, c in cells.items() for env, m, ways in _figures(c, one) if m is not None]
    way = {frozenset({AT_LEAST}): "larger", frozenset({AT_MOST}): "smaller"}.get(bound, "larger or smaller")
    what = "no verdict either way" if len(bound) == 2 else f"no verdict that it {WORDS.get(withheld, withheld)}"
    return f"{'; '.join(figures)}, so the true change may be {way} than shown; {what}"
