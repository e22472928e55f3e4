"""Where the -J report lies in an iperf3 log (pure functions, moved from iperf3.py): after the JSON objects a `-d`
(debug) run exchanges with its server, and after the events of `--json-stream` with `--json-stream-full-output`."""

from __future__ import annotations

import json
import re

from podtax.parsers.base import ParseFailure

# `-d -J`: iperf3's warning, and the label of the first object it sends the server; the report opens with `"start"`
_DEBUG_MARKS = ("Debug output (-d)", "send_parameters:")
REPORT_OPEN = re.compile(r'^\{\s*"start":', re.M)
# iperf 3.1.2 printed some doubles with a blank in the exponent (`"bits_per_second":\t5.924e 06`, esnet/iperf#520)
_SPACED_EXPONENT = re.compile(r'":[ \t]*(-?[0-9][0-9.]*[eE] [0-9]+)')
_VERSION = re.compile(r'"version":[ \t]*"(iperf [^"\n]*)"')


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


def events_match(events: str, doc: object) -> None:
    """Refuse a `--json-stream` log whose events (`events`, the text before the report) are not all the report's
    own: one `start` event, its cookie the report's `start.cookie`, and the `end` event's data the report's `end`
    (iperf_json_finish prints that event, then the report; equal in every real 3.21 capture). Another run's events
    before a report are another run's figures: the log mixes runs."""
    if not isinstance(doc, dict) or not isinstance(doc.get("start"), dict):
        return
    found: dict[str, list[object]] = {"start": [], "end": []}
    for line in events.splitlines():
        kind = line[len('{"event":"'):line.find('"', len('{"event":"'))] if line.startswith('{"event":"') else ""
        if kind in found:
            try:
                found[kind].append(json.loads(line).get("data"))
            except (ValueError, RecursionError, AttributeError):
                raise ParseFailure("truncated", f"iperf3's --json-stream `{kind}` event is damaged: "
                                                f"{line[:80]}") from None
    why = next((f"`{kind}` event printed {len(data)} times" for kind, data in found.items() if len(data) > 1), None)
    start = found["start"][0] if found["start"] else None
    if why is None and isinstance(start, dict) and start.get("cookie") != doc["start"].get("cookie"):
        why = f"the start event's cookie {start.get('cookie')!r} is not the report's {doc['start'].get('cookie')!r}"
    if why is None and found["end"] and found["end"][0] != doc.get("end"):
        why = "the end event's figures are not the report's `end`"
    if why:
        raise ParseFailure("unknown-format", f"this log holds several iperf3 JSON reports (its --json-stream events "
                                             f"are not all the report's: {why}); split it, one run per log")


def copies_only(text: str, start: int, end: int) -> bool:
    """Whether another report follows the one at text[start:end]; refused unless all that follows is further copies of
    it, byte for byte (the master builds between 9632f933 and fd96963e print the report twice, a refused connection's
    three times): two runs in one capture, neither is the answer."""
    if text.find('"start"', end) < 0:
        return False
    one, rest, copies = text[start:end].strip(), text[end:].strip(), 0
    while one and rest.startswith(one):
        rest, copies = rest[len(one):].lstrip(), copies + 1
    if rest or not copies:
        raise ParseFailure("unknown-format", "this log holds several iperf3 JSON reports; split it, one run per log")
    return True


def refuse_spaced_exponent(text: str) -> None:
    """A JSON report that does not decode because of iperf 3.1.2's blank in an exponent is malformed, not cut: refused
    naming the bug (the number is not repaired: which digits it lost is not known)."""
    m = _SPACED_EXPONENT.search(text)
    if m is None:
        return
    version = _VERSION.search(text)
    raise ParseFailure("unsupported-version", f"this {version.group(1) if version else 'iperf3'} JSON report is "
                                              f"malformed, not cut: a number has a blank in its exponent "
                                              f"(`{m.group(1)}`), iperf 3.1.2's bug (esnet/iperf#520); upgrade "
                                              "iperf3 past 3.1.2 and rerun")
