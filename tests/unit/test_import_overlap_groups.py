"""importoverlap.overlap_groups names the rows whose runs the analyzer flags OVERLAP: rows a and b of one node
overlap when a.start + 1 s < b.end and b.start + 1 s < a.end (overlap.py's join). Its sweep against every pair."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from podtax.cli.importoverlap import TOLERANCE, overlap_groups
from podtax.cli.manifest import Row

T0 = datetime(2024, 3, 1, tzinfo=UTC)


def _span(line: int, start: float, length: float, node: str = "node-1") -> tuple[Row, datetime]:
    row = Row(line, f"{line}.log", f"{line}.log", node, "host", "sysbench-cpu", {}, T0 + timedelta(seconds=start),
              None)
    return row, row.started_at + timedelta(seconds=length)


def _lines(spans: list[tuple[Row, datetime]]) -> list[list[int]]:
    return [[r.line for r in group] for group in overlap_groups(spans)]


def _pairwise(spans: list[tuple[Row, datetime]]) -> list[list[int]]:
    """The groups by every pair (the analyzer's rule) and a plain merge of connected groups."""
    groups: list[set[int]] = []
    for a, ae in spans:
        for b, be in spans:
            if a.line < b.line and a.node == b.node and a.started_at + TOLERANCE < be and \
                    b.started_at + TOLERANCE < ae:
                joined = [g for g in groups if a.line in g or b.line in g]
                groups = [g for g in groups if g not in joined] + [set().union({a.line, b.line}, *joined)]
    return sorted(sorted(g) for g in groups)


def test_a_short_run_inside_a_long_one_a_chain_and_the_tolerance() -> None:
    spans = [_span(2, 0, 100), _span(3, 50, 0.5),  # 3 lies inside 2
             _span(4, 98, 12), _span(5, 108, 7),  # 4 overlaps 2 and 5; 5 does not overlap 2: one group, a chain
             _span(6, 0, 0), _span(7, 0, 100, "node-2"),  # no length; another node
             _span(8, 300, 10), _span(9, 309, 10),  # they share 1 s: not more than the tolerance
             _span(10, 400, 10), _span(11, 408.9, 10)]  # they share 1.1 s
    assert _lines(spans) == [[2, 3, 4, 5], [10, 11]]


def test_the_sweep_finds_the_groups_every_pair_gives() -> None:
    rng = random.Random(53)
    for _ in range(300):
        spans = [_span(line, rng.choice((0, 0.3, 1, 5, 9.5)) + rng.randrange(20), rng.choice((0, 0.5, 1, 1.5, 4, 30)),
                     rng.choice(("node-1", "node-2"))) for line in range(2, 2 + rng.randrange(1, 12))]
        assert _lines(spans) == _pairwise(spans), spans
