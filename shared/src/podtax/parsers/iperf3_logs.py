"""Where the -J report lies in an iperf3 log (pure functions, moved from iperf3.py): after the JSON objects a `-d`
(debug) run exchanges with its server, and after the events of `--json-stream` with `--json-stream-full-output`."""

from __future__ import annotations

import re

from podtax.parsers.base import ParseFailure

# `-d -J`: iperf3's warning, and the label of the first object it sends the server; the report opens with `"start"`
_DEBUG_MARKS = ("Debug output (-d)", "send_parameters:")
REPORT_OPEN = re.compile(r'^\{\s*"start":', re.M)


def past_debug(text: str, start: int) -> int:
    """Where the report starts in a `-d -J` log (after the debug objects, which have no `start`), else `start`; a
    log of several -d runs (their warning or `send_parameters:` again: a killed run, then another) is refused, and
    one whose debug lines end with no report (killed during the run) is cut."""
    if not any(text.find(mark, 0, start) >= 0 for mark in _DEBUG_MARKS):
        return start
    again = next((mark for mark in _DEBUG_MARKS if text.count(mark) > 1), None)
    if again:
        raise ParseFailure("unknown-format", f"this log holds several iperf3 -d runs (`{again}` printed "
                                             f"{text.count(again)} times): split it, one run per log")
    report = REPORT_OPEN.search(text, start)
    if report is None and text.find('"event":', start) < 0:  # not --json-stream (refused below)
        raise ParseFailure("truncated", "the iperf3 -d log stops before its JSON report: the run was killed or "
                                        "its output cut")
    return report.start() if report else start


def past_events(text: str, start: int) -> int:
    """Where the report starts in a `--json-stream` log (one event per line, then, 3.20+ with
    --json-stream-full-output, the -J report), else `start`; events without the report are refused."""
    if text.find('"event":', start, start + 200) < 0:
        return start
    full = REPORT_OPEN.search(text, start)
    if full is None:
        raise ParseFailure("unknown-format", "this is iperf3's --json-stream output (one event per line): "
                                             "rerun iperf3 with -J for the report podtax reads")
    return full.start()
