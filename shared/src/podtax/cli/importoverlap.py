"""Which rows of a `podtax import` manifest the analyzer stores as one run, and which runs it flags OVERLAP.

Two rules of the analyzer, applied to the manifest's rows before anything is published, so that each warning names
exactly the rows the rule will touch:

- one capture, one run (store_imports.py, imports_twice.CAPTURE): rows of one node (in any case), env, test, params
  and start whose logs are the same text (byte for byte, CRLF taken as LF: podtax.capture_text; a manifest giving
  the day only; a failure's one line) are stored as one run, the first row's; the others are dropped.
- OVERLAP (overlap.py): two runs of one node (an imported run's cluster is always `local`) whose spans
  [start, end) share more than TOLERANCE are both flagged OVERLAP, whatever their env, test or params (a host and a
  pod run at one start measured each other), and their cells give no ratio. A run's end is its start plus the run
  length the import found (importer._ended, the event's ended_at): a failed run whose log gives no length and whose
  row asks no `time` lasts nothing and overlaps nothing. The rows dropped as another row's capture are not runs.

Runs stored before (other imports, other campaigns) are not known here; the analyzer flags those overlaps too.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import deque
from collections.abc import Callable
from datetime import datetime, timedelta

from podtax.capture_text import capture_text
from podtax.cli.manifest import Row
from podtax.templates import params_key

TOLERANCE = timedelta(seconds=1)  # overlap.TOLERANCE: spans sharing this much or less do not overlap


def same_captures(rows: list[Row], read: Callable[[Row], str]) -> list[list[Row]]:
    """The rows of each capture logged by two or more rows, in manifest order (the first is the run stored). Only
    the logs of rows sharing node, env, test, params and start with another row are read (once more)."""
    starts: dict[tuple[str, str, str, str, datetime], list[Row]] = {}
    for row in rows:
        starts.setdefault((row.node.lower(), row.env, row.test, params_key(row.params), row.started_at), []).append(row)
    captures: list[list[Row]] = []
    for group in starts.values():
        logs: dict[bytes, list[Row]] = {}
        for row in group if len(group) > 1 else []:
            logs.setdefault(hashlib.sha256(capture_text(read(row)).encode()).digest(), []).append(row)
        captures += [at for at in logs.values() if len(at) > 1]
    return sorted(captures, key=lambda at: at[0].line)


def capture_warnings(captures: list[list[Row]]) -> list[str]:
    """One sentence per capture logged by several rows (same_captures)."""
    return [f"lines {', '.join(str(r.line) for r in at)}: {at[0].test} on {at[0].node.lower()} ({at[0].env}) log the "
            f"same text at one start ({at[0].started_at.isoformat()}): stored as one run ({len(at) - 1} dropped); "
            "give each row the time its run started" for at in captures]


def overlap_groups(spans: list[tuple[Row, datetime]]) -> list[list[Row]]:
    """The rows (each with its run's end) whose runs the analyzer flags OVERLAP, as groups that overlap each other
    (connected), in manifest order. Rows a and b of one node overlap when a.start + TOLERANCE < b.end and
    b.start + TOLERANCE < a.end (overlap.py's join). A sweep in start order: the rows still running past a row's
    start + TOLERANCE overlap each other pairwise, so the row joins their group when the earliest of them
    started more than TOLERANCE before its end; O(n log n), however many rows overlap."""
    parent = list(range(len(spans)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    nodes: dict[str, list[int]] = {}
    for i, (row, _) in enumerate(spans):
        nodes.setdefault(row.node.lower(), []).append(i)
    flagged: set[int] = set()
    for ids in nodes.values():
        ends: list[tuple[datetime, int]] = []  # the running rows by end, to retire them
        running: deque[int] = deque()  # the same rows in start order, retired ones popped lazily
        retired: set[int] = set()
        for j in sorted(ids, key=lambda i: (spans[i][0].started_at, spans[i][0].line)):
            start, end = spans[j][0].started_at, spans[j][1]
            while ends and ends[0][0] <= start + TOLERANCE:
                retired.add(heapq.heappop(ends)[1])
            while running and running[0] in retired:
                running.popleft()
            if running and spans[running[0]][0].started_at + TOLERANCE < end:
                parent[root(j)] = root(running[0])
                flagged |= {j, running[0]}
            heapq.heappush(ends, (end, j))
            running.append(j)
    groups: dict[int, list[Row]] = {}
    for i in sorted(flagged, key=lambda i: spans[i][0].line):
        groups.setdefault(root(i), []).append(spans[i][0])
    return sorted(groups.values(), key=lambda at: at[0].line)


def overlap_warnings(spans: list[tuple[Row, datetime]]) -> list[str]:
    """One sentence per group of rows whose runs the analyzer flags OVERLAP (overlap_groups); `spans`: the rows
    stored as runs (not those dropped as another row's capture), each with its run's end."""
    said = []
    for at in overlap_groups(spans):
        kinds = ", ".join(dict.fromkeys(f"{r.test} ({r.env})" for r in at))
        said.append(f"lines {', '.join(str(r.line) for r in at)}: {kinds} on {at[0].node.lower()} overlap in time "
                    f"(from {min(r.started_at for r in at).isoformat()}): the analyzer flags them OVERLAP and gives "
                    "no ratio; give each row the time its run started")
    return said
