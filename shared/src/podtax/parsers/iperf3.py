"""iperf3 `-J` (JSON) client reports, TCP and UDP, forward or reverse (`-R`).

Metrics (all from the end-of-test sums, the receiver's view where it matters):
- `throughput_mbps` (Mbit/s, higher is better): `end.sum_received.bits_per_second` / 1e6, what
  arrived at the receiving side (the client with `-R`); the template's primary metric.
- `sent_mbps` (Mbit/s, higher): what the sender pushed (`sum_sent`).
- TCP: `retransmits` (count, lower). UDP: `jitter_ms` (ms, lower), `lost_percent` (%, lower).
- `cpu_local_percent`, `cpu_remote_percent` (% of one host's CPUs, lower).
- `--bidir`: `reverse_throughput_mbps` (and for UDP `reverse_jitter_ms`, `reverse_lost_percent`), flagged BIDIR,
  and PARAM_MISMATCH whatever the params (the template never passes --bidir: each direction shares the path).
A run whose cap (`target_bitrate`: `-b`, or UDP's 1 Mbit/s without it) is not the requested `bitrate` (absent:
the template's 0, unlimited) is flagged PARAM_MISMATCH: its throughput is bounded by another cap. So, whatever
the params (a run, an import, or none: `podtax parse`), is a run bound by an amount (`-n` bytes or `-k` blocks,
echoed as `test_start.bytes` / `blocks` with `duration` 0) instead of a time: the template always passes `-t`, and
a `-n 50M` run on a loopback is over in 16 ms, mostly TCP's start. So, too, is a run with `-O N` (`test_start.omit`):
its sums leave out its first N seconds, which the template counts. Without params no param is compared.
iperf3's master builds between commits 9632f933 (2024-04-25) and fd96963e (2024-04-26, esnet/iperf#1688; in 3.17),
which call themselves `iperf 3.16+`, print the -J report twice (a refused connection's three times): a log that is one
report and further copies of it, byte for byte, is read as the one run it is, flagged REPEATED; two different reports
are refused.
A server's own report (`iperf3 -s -J`) is refused: it lacks the client's view. With `-d` (debug) the JSON objects
the client exchanges with the server (`send_parameters:`, `send_results`, `get_results`) come first: passed over.

iperf3 3.12 exits 0 even when it failed: the JSON's `error` decides. Failures: `refused`
(connection refused), `unreachable` (no route, network unreachable), `timeout` (nothing answered,
or iperf3 was stopped before the test ran), `server-busy` (the server runs another test),
`truncated` (the JSON is cut), `unsupported-version` (a reverse UDP report before 3.11, see below; iperf 3.1.2's
JSON with a blank in an exponent, `5.924e 06`, esnet/iperf#520: malformed, not cut),
`fatal` (any other error iperf3 reports), `bad-argument` (a `parameter error` printed before the
test, with the usage text, or an option getopt refused: `unrecognized option '--json-stream'` before 3.17).
`--json-stream` output (3.17) is refused with the option to use, unless `--json-stream-full-output` (3.20) printed
the -J report after the events: that report is read, if the events are its own (one `start` event of its cookie, an
`end` event of its `end`), else the log is refused as several reports (another run's events before it).

Before 3.10 an iperf3 server counted its wait for the client's end-of-test message (control messages without
TCP_NODELAY) into its own time, 40-60 ms: a forward run's `sum_received.seconds` 1.0505 s against the sender's 1.0009
s for -t 1 (3.7), its rate 4.7% low (0.5% at -t 10) though every byte arrived within the sender's time; with -R the
server is the sender and `sum_sent.seconds` is the longer (3.5: 1.0493 s against 1.0026 s). So the server's side's
rate is then its bytes over the client's time (forward: `throughput_mbps`; -R: `sent_mbps`), flagged SERVER_LAG with
the rate iperf3 printed (see iperf3_flags.server_lag); not a run bound by bytes or blocks (-n, -k: the sender's
time is only its writes into the socket buffer) or with --omit (the receiver counts more bytes than were sent).

Before 3.11 a UDP report has one `end.sum`: the sender's rate with the receiver's jitter and loss.
A forward run gives `sent_mbps`, `jitter_ms` and `lost_percent`, no `throughput_mbps`, flagged
SENDER_ONLY; a reverse one is refused. Before 3.11 `--bidir` printed `sum_sent`/`sum_received` twice
in `end` (client-to-server first): the second pair is read as the reverse direction.

Before 3.1.3 iperf3 printed a double with `%g` (its cjson.c): a 0/0, such as the `lost_percent` of a UDP interval
that received no packet (3.0.x), came out `nan` or `-nan` (`inf` for x/0), which is not JSON. Such a value is read
as not measured: left out where it is jitter, loss or CPU use, flagged NAN_FIGURES with where it was; a rate
(`bits_per_second` of a sum read) that is not a number is refused, as the run's time was not measured.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from podtax.parsers.base import Echoed, MetricList, Parsed, ParseFailure, compare_echoed, errors_flag
from podtax.parsers.iperf3_flags import amount_bound, amount_flag, bitrate_flag, omit_flag, server_lag
from podtax.parsers.iperf3_logs import copies_only, events_match, past_debug, past_events, refuse_spaced_exponent

TOOL = "iperf3"
TEXT_ERROR = "iperf3: error - "  # how iperf3 without -J reports a failure
TEXT_DONE = "iperf Done."  # the last line of a text report
# The text report's marks: its header up to 3.6 (`[ ID ] Interval`; iperf 2 and iperf3 3.7+ write
# `[ ID] Interval`, 3.7+ then `Bitrate`), the client's first line, the server's for each test
USAGE = "Usage: iperf3 ["  # the usage text iperf3 prints after getopt's refusal of an option
TEXT_MARKS = ("[ ID ] Interval", "[ ID] Interval           Transfer     Bitrate", "Connecting to host ",
              "Accepted connection from ")
_DECODER = json.JSONDecoder()
REPEATED = ("REPEATED: the log holds the same iperf3 report more than once, byte for byte (as iperf3 master builds "
            "between 9632f933 and fd96963e, `iperf 3.16+`, print it: esnet/iperf#1688), read once")
# `--bidir` on a loopback: 10,501 Mbit/s forward beside the reverse traffic, 18,679 one way (medians of 3)
BIDIR_MISMATCH = ("PARAM_MISMATCH: bidir: iperf3 ran traffic both ways at once (--bidir); podtax's iperf3 runs one "
                  "direction, so throughput_mbps was measured beside the reverse traffic and is of another cell")
# a bare `nan`, `-nan`, `inf` or `-inf` value (iperf3 before 3.1.3: `%g`), as JSON's NaN and Infinity
_BARE = re.compile(r'(":[ \t]*)(-?)(nan|inf)(?=[ \t\r\n]*[,}\]])')
# what a report holding such a value (before or after _load reads it) contains, as `system_info` never does
_NOT_FINITE = ("nan", "NaN", "Infinity", "inf,", "inf\n", "inf\r", "inf}")


def _keep_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's repeated keys kept: the second `sum_sent` becomes `sum_sent_bidir_reverse`, as 3.11
    names it (`--bidir` before 3.11 printed both directions' sums under the same keys)."""
    doc: dict[str, Any] = {}
    for key, value in pairs:
        doc[key if key not in doc else f"{key}_bidir_reverse"] = value
    return doc


_DUPLICATES = json.JSONDecoder(object_pairs_hook=_keep_repeats)
_ERRORS = (  # (substring of iperf3's error, reason, advice)
    ("Connection refused", "refused", "is the iperf3 server running on that address and port?"),
    ("Network is unreachable", "unreachable", "no route to the server's address from this side"),
    ("No route to host", "unreachable", "no route to the server's address from this side"),
    ("timed out", "timeout", "the server did not answer in time"),
    ("Name or service not known", "unreachable", "the server's name does not resolve: check it (or use its address)"),
    ("interrupt", "timeout", "iperf3 was stopped before the test finished (the run's time limit?)"),
    ("server is busy", "server-busy", "another client is testing against this server; runs must not overlap"),
    # the server stopped mid-test (SIGINT, SIGKILL): the data connection reset (TCP), the control one closed (UDP)
    ("stream socket: Connection reset by peer", "fatal", "the server reset the test's connection mid-test: was it "
                                                        "stopped?"),
    ("control socket has closed unexpectedly", "fatal", "the server closed the test mid-test: was it stopped?"),
)


def _load(text: str) -> tuple[dict[str, Any], bool]:
    """The report, and whether the log holds it again, byte for byte (the `iperf 3.16+` builds of esnet/iperf#1688)."""
    bad = text.find("iperf3: parameter error - ")  # refused before any JSON, with the usage text
    if bad >= 0:
        raise ParseFailure("bad-argument", f"iperf3 rejected its arguments: {text[bad:].splitlines()[0][8:]}")
    start = text.find("{")
    usage = text.find(USAGE)
    if start < 0 and usage >= 0:  # getopt refused an option (`iperf3: unrecognized option '--json-stream'`)
        said = text[:usage].strip().splitlines()
        raise ParseFailure("bad-argument", f"iperf3 rejected its command line{': ' + said[-1][:200] if said else ''} "
                                           "(it printed its usage text instead of a report)")
    if start < 0:
        error = text.find(TEXT_ERROR)  # iperf3 without -J reports its error as a line
        if error >= 0:
            raise _fail(text[error + len(TEXT_ERROR):].split("\n", 1)[0].strip(), {"start": {}})
        if text.find("Server listening on ") >= 0 or text.find("the server has terminated") >= 0:
            raise ParseFailure("unknown-format", "this is iperf3's text report of a server (a server runs until it "
                                                 "is stopped): parse the client's output, run with -J")
        interrupted = text.find("iperf3: interrupt - ")
        if interrupted >= 0 and TEXT_DONE not in text:  # the text report of a run stopped by a signal
            raise _fail(text[interrupted + 8:].split("\n", 1)[0].strip(), {"start": {}})
        if text.find("Client connecting to ") >= 0 and text.find(", TCP port ") >= 0 or \
                text.find("Server listening on TCP port ") >= 0:  # iperf 2's banner (iperf3 says `Connecting to host`)
            raise ParseFailure("wrong-tool", "this is iperf 2 output (`Client connecting to ..., TCP port ...`), not "
                                             "iperf3: run iperf3 with -J")
        if TEXT_DONE in text or any(mark in text for mark in TEXT_MARKS):
            raise ParseFailure("unknown-format", "this is iperf3's text report (rounded to 3 digits): rerun "
                                                 "iperf3 with -J for the JSON report podtax reads")
        raise ParseFailure("unknown-format", "no iperf3 JSON report (was iperf3 run with -J?)")
    events = past_debug(text, start)  # -d's objects: passed over; so are --json-stream's events, the report's own
    start = past_events(text, events)
    decoder = _DECODER if text.count('"sum_sent"') < 2 else _DUPLICATES  # --bidir before 3.11
    try:
        doc, end = decoder.raw_decode(text, start)
    except (ValueError, RecursionError) as exc:
        refuse_spaced_exponent(text)
        damaged = ParseFailure("truncated", f"the iperf3 JSON report is incomplete or damaged ({exc})")
        bare = _BARE.sub(_as_json, text) if text.find("nan") >= 0 or text.find("inf") >= 0 else text
        if bare == text:
            raise damaged from None
        try:
            doc, end = decoder.raw_decode(bare, start)
        except (ValueError, RecursionError):
            raise damaged from None
        text = bare
    events_match(text[events:start], doc)
    twice = copies_only(text, start, end)
    if not isinstance(doc, dict) or not isinstance(doc.get("start"), dict):
        inner = next((key for key, value in doc.items() if isinstance(value, dict)
                      and isinstance(value.get("start"), dict) and "end" in value),
                     None) if isinstance(doc, dict) else None
        if inner:  # a test harness's record (`{"Results": {...iperf3's report...}}`)
            raise ParseFailure("unknown-format", f"the JSON holds an iperf3 report under `{inner}`, inside another "
                                                 f"document: extract it (`jq '.{inner}'`) and parse that")
        if TEXT_DONE in text[:start] or any(mark in text[:start] for mark in TEXT_MARKS):  # then a wrapper's JSON
            raise ParseFailure("unknown-format", "this is iperf3's text report (rounded to 3 digits), followed by "
                                                 "other JSON: rerun iperf3 with -J for the JSON report podtax reads")
        raise ParseFailure("unknown-format", "the JSON is not an iperf3 report (no `start` object)")
    return doc, twice


def _as_json(m: re.Match[str]) -> str:
    """`nan`, `-nan` -> NaN; `inf` -> Infinity; `-inf` -> -Infinity (Python's json reads them, JSON has none)."""
    return m.group(1) + ("NaN" if m.group(3) == "nan" else m.group(2) + "Infinity")


def _not_finite(value: Any, path: str, found: list[str]) -> None:
    """The paths of the values in `value` that are not finite numbers (`end.streams[0].udp.lost_percent`)."""
    if isinstance(value, float) and not math.isfinite(value):
        found.append(path)
    elif isinstance(value, dict):
        for key, item in value.items():
            _not_finite(item, f"{path}.{key}" if path else str(key), found)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _not_finite(item, f"{path}[{i}]", found)


def _rate(section: Mapping[str, Any], what: str) -> float:
    """A sum's bits_per_second in Mbit/s; one that is not a number (`nan`: over no measured time) is refused."""
    value = _num(section, "bits_per_second", what)
    if not math.isfinite(value):
        raise ParseFailure("unknown-format", f"iperf3 printed `{value}` for {what}.bits_per_second (iperf3 before "
                                             "3.1.3 writes a 0/0 so): the rate was not measured, no figure to read")
    return value / 1e6


def _measured(metrics: MetricList, left: list[str], name: str, value: float, unit: str) -> None:
    """A secondary figure (lower is better), left out (named in `left`) when it is not a number."""
    if math.isfinite(value):
        metrics.add(name, value, unit, False)
    else:
        left.append(name)


def _nan_flag(doc: Mapping[str, Any], left: list[str]) -> list[str]:
    found: list[str] = []
    _not_finite(doc, "", found)
    if not found:
        return []
    where = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    out = f"; left out: {', '.join(left)}" if left else "; no figure read is among them"
    return [f"NAN_FIGURES: iperf3 printed `nan` (or `inf`) for {len(found)} value(s), read as not measured (iperf3 "
            f"before 3.1.3 writes a 0/0 so, an interval or stream without packets): {where}{out}"]


def _version(doc: Mapping[str, Any]) -> str | None:
    text = str(doc["start"].get("version", ""))
    return text.removeprefix("iperf ").strip() or None


def _before_3_11(doc: Mapping[str, Any], release: tuple[int, int] = (3, 11)) -> bool:
    """The report's version is older than `release` (3.11: the UDP layout with `sum_sent` and `sum_received`)."""
    parts = (_version(doc) or "").split("+")[0].split(".")[:2]
    if len(parts) < 2 or not all(p.isdecimal() for p in parts):
        return False
    return (int(parts[0]), int(parts[1])) < release


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
    try:
        return float(value)
    except OverflowError:  # an integer of hundreds of digits
        raise ParseFailure("unknown-format", f"iperf3's {what}.{key} is not a finite number (an integer beyond any "
                                             "float): the report is damaged") from None


def parse(text: str, test: str | None = None, requested: Mapping[str, Any] | None = None,
          recorded_version: str | None = None) -> Parsed:
    doc, twice = _load(text)
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
        if isinstance(end.get("sum"), dict) and udp and received is None and sent is None and _before_3_11(doc):
            return _udp_sender_only(doc, end["sum"], ts, requested, text, twice)
        raise ParseFailure("truncated", "the iperf3 report has no sum_sent/sum_received")
    metrics = MetricList()
    left: list[str] = []  # the secondary figures iperf3 printed as `nan`
    old = _before_3_11(doc, (3, 10)) and "sum_received_bidir_reverse" not in end  # 3.7-3.9 --bidir: not flagged
    lag = server_lag(old, ts, received, sent)  # None, or the server's side's rate over the client's time
    for name, part, key in (("throughput_mbps", received, "sum_received"), ("sent_mbps", sent, "sum_sent")):
        metrics.add(name, lag[1] if lag and lag[0] == name else _rate(part, key), "Mbit/s", True)
    if udp:
        _measured(metrics, left, "jitter_ms", _num(received, "jitter_ms", "sum_received"), "ms")
        _measured(metrics, left, "lost_percent", _num(received, "lost_percent", "sum_received"), "%")
    elif "retransmits" in sent and _num(sent, "retransmits", "sum_sent") >= 0:  # -1: iperf3 could not count them
        metrics.add("retransmits", _num(sent, "retransmits", "sum_sent"), "count", False)
    flags: list[str] = ([lag[2]] if lag else []) + ([REPEATED] if twice else [])
    back = end.get("sum_received_bidir_reverse")
    if isinstance(back, dict):  # --bidir: the other direction, measured at the same time
        metrics.add("reverse_throughput_mbps", _rate(back, "sum_received_bidir_reverse"), "Mbit/s", True)
        if udp:
            _measured(metrics, left, "reverse_jitter_ms", _num(back, "jitter_ms", "sum_received_bidir_reverse"), "ms")
            _measured(metrics, left, "reverse_lost_percent", _num(back, "lost_percent", "sum_received_bidir_reverse"),
                      "%")
        flags.append("BIDIR: traffic ran both ways at once (--bidir); throughput_mbps is the client-to-server "
                     "direction, reverse_throughput_mbps the other")
        flags.append(BIDIR_MISMATCH)  # whatever the params: the template never passes --bidir
    cpu = end.get("cpu_utilization_percent")
    if isinstance(cpu, dict):
        _measured(metrics, left, "cpu_local_percent", _num(cpu, "host_total", "cpu_utilization_percent"), "%")
        _measured(metrics, left, "cpu_remote_percent", _num(cpu, "remote_total", "cpu_utilization_percent"), "%")
    if _num(received, "bytes", "sum_received") <= 0:
        if _num(sent, "bytes", "sum_sent") > 0:  # `-n 10K`: over before the receiver's first report
            raise ParseFailure("fatal", f"iperf3's receiver reported 0 bytes while the sender sent "
                                        f"{_num(sent, 'bytes', 'sum_sent'):.0f} in {sent.get('seconds', '?')} s: "
                                        "the transfer was too short to measure (raise -t, -n or -k)")
        raise ParseFailure("timeout", "iperf3 moved no data: the receiver got 0 bytes")
    echoed = _echoed(ts, udp)
    if ts.get("bidir") == 1 or isinstance(back, dict):
        echoed["bidir"] = 1
    flags += _run_flags(requested, echoed, ts, sent, text)
    if any(text.find(word) >= 0 for word in _NOT_FINITE):
        flags += _nan_flag(doc, left)
    return Parsed(TOOL, _version(doc), None, metrics.as_tuple(), echoed, tuple(flags))


def _run_flags(requested: Mapping[str, Any] | None, echoed: Echoed, ts: Mapping[str, Any], total: Mapping[str, Any],
               text: str) -> list[str]:
    """The flags of what the run did against its params (`total`: the sender's sums), and another run's error."""
    amount = amount_bound(ts)
    return _compare(requested, echoed, amount) + bitrate_flag(requested, ts) \
        + amount_flag(requested, amount, total) + omit_flag(ts) + _errors_beside(text)


def _errors_beside(text: str) -> list[str]:
    """The ERRORS flag when the log holds, beside the JSON report read, another run's failure as
    iperf3 prints it without -J (the JSON's own error is a key, never these words)."""
    for words in (TEXT_ERROR, "iperf3: interrupt - "):
        at = text.find(words)
        if at >= 0:
            return [errors_flag(TOOL, text[at:].split("\n", 1)[0].strip())]
    return []


def _echoed(ts: Mapping[str, Any], udp: bool) -> Echoed:
    protocol = str(ts.get("protocol", "")).lower()  # tcp, udp or sctp
    echoed: Echoed = {"protocol": "udp" if udp else protocol if protocol in ("tcp", "sctp") else "tcp"}
    for key, name in (("num_streams", "parallel"), ("duration", "duration"), ("reverse", "reverse"),
                      ("blksize", "length")):
        value = ts.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            echoed[name] = value
    return echoed


def _compare(requested: Mapping[str, Any] | None, echoed: Echoed, amount: str | None) -> list[str]:
    req = dict(requested or {})
    if req.get("length") == 0:
        req.pop("length")  # 0 = iperf3's default, echoed as the actual block size
    if amount:
        req.pop("duration", None)  # echoed as 0: no time bound (iperf3_flags.amount_flag says what bound it)
    return compare_echoed(req, echoed, ("protocol", "parallel", "duration", "reverse", "length"))


def _udp_sender_only(doc: Mapping[str, Any], total: Mapping[str, Any], ts: Mapping[str, Any],
                     requested: Mapping[str, Any] | None, text: str, twice: bool) -> Parsed:
    """A UDP report before 3.11: `end.sum` holds the sender's rate and the receiver's jitter and loss."""
    if ts.get("reverse") == 1:
        raise ParseFailure("unsupported-version", f"this iperf3 {_version(doc) or ''} reverse UDP report has "
                                                  "only end.sum (no sum_received, added in 3.11): whose rate it "
                                                  "holds is not stated; rerun with iperf3 3.11 or later")
    if _num(total, "bytes", "sum") <= 0:
        raise ParseFailure("timeout", "iperf3 moved no data: the sender sent 0 bytes")
    metrics = MetricList()
    left: list[str] = []  # the secondary figures iperf3 printed as `nan`
    metrics.add("sent_mbps", _rate(total, "sum"), "Mbit/s", True)
    _measured(metrics, left, "jitter_ms", _num(total, "jitter_ms", "sum"), "ms")
    _measured(metrics, left, "lost_percent", _num(total, "lost_percent", "sum"), "%")
    flags = ["SENDER_ONLY: this iperf3 UDP report (before 3.11) gives the sender's rate with the receiver's "
             "jitter and loss, not the receiver's throughput (no throughput_mbps)"] + ([REPEATED] if twice else [])
    echoed = _echoed(ts, True)
    return Parsed(TOOL, _version(doc), None, metrics.as_tuple(), echoed,
                  tuple(flags + _run_flags(requested, echoed, ts, total, text) + _nan_flag(doc, left)))
