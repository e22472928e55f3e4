"""Sides that ran one after the other: every run of one side started before the first run of the other.

The runner interleaves a cell's two sides so that whatever changes over a campaign (an update, another
tenant's load, the room's temperature) falls on both alike. Runs imported from old logs, or a side re-run
on another day, can instead form two blocks in time: a step between the blocks then reads as the pod's
effect, and nothing in the values tells them apart (DRIFT sees only a change within a side). Such a cell
keeps its figures, and its sentence and warnings say the sides were not interleaved, with both time spans
(a cell whose flags withhold its ratio and verdict has no figure to say it of).
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

from podtax_analyzer.report_models import CellComparison
from podtax_analyzer.wording import plural, side_name

MIN_RUNS = 2  # one run a side is always "before" the other: nothing to say

_SPANS_SQL = """
SELECT cluster, node, test, params_key, env, min(started_at), max(started_at), count(*)
FROM runs
WHERE campaign = $1 AND status = 'ok' AND started_at IS NOT NULL
GROUP BY ALL
"""


def _when(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def note(c: CellComparison, spans: dict[str, tuple[datetime, datetime, int]]) -> str | None:
    """The sentence for cell ``c`` when its sides ran one after the other (``spans``: env -> first start, last
    start, runs), else None. A cell with neither a ratio nor a direction has no figure the order could bias."""
    base, cand = spans.get(c.baseline), spans.get(c.candidate)
    if base is None or cand is None or min(base[2], cand[2]) < MIN_RUNS or (c.ratio is None and c.direction is None):
        return None
    pair = (c.baseline, c.candidate)
    (first, a), (then, b) = sorted(((c.baseline, base), (c.candidate, cand)), key=lambda e: e[1][0])
    if a[1] >= b[0]:
        return None
    name_a, name_b = side_name(first, pair), side_name(then, pair)
    return (f"Not interleaved: every {name_a} run ({plural(a[2], 'run')}, {_when(a[0])} to {_when(a[1])} UTC) "
            f"started before the first {name_b} run ({plural(b[2], 'run')}, {_when(b[0])} to {_when(b[1])} UTC), "
            f"so a change of the machine between them would read as the {side_name(c.candidate, pair)}'s effect; "
            f"run both sides interleaved to tell them apart.")


def mark(con: duckdb.DuckDBPyConnection, campaign: str, rows: list[CellComparison]) -> list[CellComparison]:
    """``rows`` with the sentence and warnings of each cell whose sides ran one after the other extended."""
    spans: dict[tuple[str, str, str, str], dict[str, tuple[datetime, datetime, int]]] = {}
    for cluster, node, test, key, env, first, last, n in con.execute(_SPANS_SQL, [campaign]).fetchall():
        spans.setdefault((cluster, node, test, key), {})[env] = (first, last, n)
    out = []
    for c in rows:
        said = note(c, spans.get((c.cluster, c.node, c.test, c.params), {}))
        out.append(c if said is None else
                   c.model_copy(update={"sentence": f"{c.sentence} {said}", "warnings": [*c.warnings, said]}))
    return out
