"""iperf3 `-J` (JSON) client reports, TCP and UDP, forward or reverse (`-R`).

Metrics (all from the end-of-test sums, the receiver's view where it matters):
- `throughput_mbps` (Mbit/s, higher is better): `end.sum_received.bits_per_second` / 1e6, what
  arrived at the receiving side (the client with `-R`); the template's primary metric.
- `sent_mbps` (Mbit/s, higher): what the sender pushed (`sum_sent`).
- TCP: `retransmits` (count, lower). UDP: `jitter_ms` (ms, lower), `lost_percent` (%, lower).
- `cpu_local_percent`, `cpu_remote_percent` (% of one host's CPUs, lower).
- `--bidir`: `reverse_throughput_mbps` (and for UDP `reverse_jitter_ms`, `reverse_lost_percent`), flagged BIDIR.
A server's own report (`iperf3 -s -J`) is refused: it lacks the client's view.

iperf3 3.12 exits 0 even when it failed: the JSON's `error` decides. Failures: `refused`
(connection refused), `unreachable` (no route, network unreachable), `timeout` (nothing answered,
or iperf3 was stopped before the test ran), `server-busy` (the server runs another test),
`truncated` (the JSON is cut), `unsupported-version` (iperf3 3.1's UDP report, which has only the
sender's rate), `fatal` (any other error iperf3 reports), `bad-argument` (a
`parameter error` printed before the test, with the usage text).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from podtax.parsers.base import Echoed, MetricList, Parsed, ParseFailure, compare_echoed

TOOL = "iperf3"
TEXT_ERROR = "iperf3: error - "  # how iperf3 without -J reports a failure
TEXT_DONE = "iperf Done."  # the last line of a text report
TEXT_HEADER = "[ ID ] Interval"  # the text report's table header (iperf 2 writes `[ ID] Interval`)
_DECODER = json.JSONDecoder()
_ERRORS = (  # (substring of iperf3's error, reason, advice)
    ("Connection refused", "refused", "is the iperf3 server running on that address and port?"),
    ("Network is unreachable", "unreachable", "no route to the server's address from this side"),
    ("No route to host", "unreachable", "no route to the server's address from this side"),
    ("timed out", "timeout", "the server did not answer in time"),
    ("interrupt", "timeout", "iperf3 was stopped before the test finished (the run's time limit?)"),
    ("server is busy", "server-busy", "another client is testing against this server; runs must not overlap"),
)


def _load(text: str) -> dict[str, Any]:
    bad = text.find("iperf3: parameter error - ")  # refused before any JSON, with the usage text
    if bad >= 0:
        raise ParseFailure("bad-argument", f"iperf3 rejected its arguments: {text[bad:].splitlines()[0][8:]}")
    start = text.find("{")
    if start < 0:
        error = text.find(TEXT_ERROR)  # iperf3 without -J reports its error as a line
        if error >= 0:
            raise _fail(text[error + len(TEXT_ERROR):].split("\n", 1)[0].strip(), {"start": {}})
        if TEXT_DONE in text or TEXT_HEADER in text:
            raise ParseFailure("unknown-format", "this is iperf3's text report (rounded to 3 digits): rerun "
                                                 "iperf3 with -J for the JSON report podtax reads")
        raise ParseFailure("unknown-format", "no iperf3 JSON report (was iperf3 run with -J?)")
    try:
        doc, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError) as exc:
        raise ParseFailure("truncated", f"the iperf3 JSON report is incomplete or damaged ({exc})") from None
    if text.find('"start"', end) >= 0:  # a second report: two runs in one capture, neither is the answer
        raise ParseFailure("unknown-format", "this log holds several iperf3 JSON reports; split it, one run per log")
    if not isinstance(doc, dict) or not isinstance(doc.get("start"), dict):
        raise ParseFailure("unknown-format", "the JSON is not an iperf3 report (no `start` object)")
    return doc


def _version(doc: Mapping[str, Any]) -> str | None:
    text = str(doc["start"].get("version", ""))
    return text.removeprefix("iperf ").strip() or None


def _fail(error: str, doc: Mapping[str, Any]) -> ParseFailure:
    target = doc["start"].get("connecting_to") or {}
    where = f" ({target.get('host')}:{target.get('port')})" if target.get("host") else ""
    for word, reason, advice in _ERRORS:
        if word in error:
            return ParseFailure(reason, f"iperf3: {error}{where}: {advice}")
    return ParseFailure("fatal", f"iperf3 reported an error: {error}{where}")


def _num(section: Mapping[str, Any], key: str, what: str) -> float:
    value = section.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseFailure("truncated", f"the iperf3 report has no numeric {what}.{key}")
    return float(value)


def parse(text: str, test: str | None = None, requested: Mapping[str, Any] | None = None,
          recorded_version: str | None = None) -> Parsed:
    doc = _load(text)
    error = doc.get("error")
    if isinstance(error, str) and error:
        raise _fail(error, doc)
    end = doc.get("end")
    ts = doc["start"].get("test_start") or {}
    if "accepted_connection" in doc["start"]:  # `iperf3 -s -J`: the server's half of the figures
        raise ParseFailure("unknown-format", "this is an iperf3 server's report (`iperf3 -s -J`), which lacks the "
                                             "client's view of the test: parse the client's -J output")
    if not isinstance(end, dict) or not end:
        if doc.get("intervals") == [] and not doc["start"].get("connected"):
            raise ParseFailure("truncated", "the iperf3 report is empty (no connection, no interval, no "
                                            "summary): iperf3 stopped before the test ran")
        raise ParseFailure("truncated", "the iperf3 report has no end-of-test summary")
    udp = str(ts.get("protocol", "")).upper() == "UDP"
    received, sent = end.get("sum_received"), end.get("sum_sent")
    if not isinstance(received, dict) or not isinstance(sent, dict):
        if isinstance(end.get("sum"), dict) and udp:  # iperf3 3.1's UDP layout: one `sum`, the sender's rate
            raise ParseFailure("unsupported-version", f"this iperf3 {_version(doc) or ''} UDP report has only "
                                                      "end.sum, the sender's rate (no sum_received): the "
                                                      "receiver's throughput is not in it; rerun with a newer "
                                                      "iperf3")
        raise ParseFailure("truncated", "the iperf3 report has no sum_sent/sum_received")
    metrics = MetricList()
    metrics.add("throughput_mbps", _num(received, "bits_per_second", "sum_received") / 1e6, "Mbit/s", True)
    metrics.add("sent_mbps", _num(sent, "bits_per_second", "sum_sent") / 1e6, "Mbit/s", True)
    if udp:
        metrics.add("jitter_ms", _num(received, "jitter_ms", "sum_received"), "ms", False)
        metrics.add("lost_percent", _num(received, "lost_percent", "sum_received"), "%", False)
    elif "retransmits" in sent:
        metrics.add("retransmits", _num(sent, "retransmits", "sum_sent"), "count", False)
    flags: list[str] = []
    back = end.get("sum_received_bidir_reverse")
    if isinstance(back, dict):  # --bidir: the other direction, measured at the same time
        metrics.add("reverse_throughput_mbps", _num(back, "bits_per_second", "sum_received_bidir_reverse") / 1e6,
                    "Mbit/s", True)
        if udp:
            metrics.add("reverse_jitter_ms", _num(back, "jitter_ms", "sum_received_bidir_reverse"), "ms", False)
            metrics.add("reverse_lost_percent", _num(back, "lost_percent", "sum_received_bidir_reverse"), "%", False)
        flags.append("BIDIR: traffic ran both ways at once (--bidir); throughput_mbps is the client-to-server "
                     "direction, reverse_throughput_mbps the other")
    cpu = end.get("cpu_utilization_percent")
    if isinstance(cpu, dict):
        metrics.add("cpu_local_percent", _num(cpu, "host_total", "cpu_utilization_percent"), "%", False)
        metrics.add("cpu_remote_percent", _num(cpu, "remote_total", "cpu_utilization_percent"), "%", False)
    if _num(received, "bytes", "sum_received") <= 0:
        raise ParseFailure("timeout", "iperf3 moved no data: the receiver got 0 bytes")
    echoed: Echoed = {"protocol": "udp" if udp else "tcp"}
    for key, name in (("num_streams", "parallel"), ("duration", "duration"), ("reverse", "reverse"),
                      ("blksize", "length")):
        value = ts.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            echoed[name] = value
    if ts.get("bidir") == 1:
        echoed["bidir"] = 1
    req = dict(requested or {})
    if req.get("length") == 0:
        req.pop("length")  # 0 = iperf3's default, echoed as the actual block size
    flags += compare_echoed(req, echoed, ("protocol", "parallel", "duration", "reverse", "length"))
    return Parsed(TOOL, _version(doc), None, metrics.as_tuple(), echoed, tuple(flags))
