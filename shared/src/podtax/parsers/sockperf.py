"""sockperf `ping-pong` client reports (text; ANSI colour codes are removed first).

With `--full-rtt` (the template's choice) figures are round-trip times, named `rtt_*`; without it
sockperf prints half the round trip as "latency" (`avg-latency`, `avg-lat` in older versions), named
`latency_*` here (never mixed up). 3.8 and later print more statistics after the std-dev (not read).
Metrics, µs and lower is better: `<kind>_avg_us`, `<kind>_stddev_us`, `<kind>_min_us`,
`<kind>_max_us`, `<kind>_p25_us` ... `<kind>_p99_999_us` (percentile 99.900 -> `p99_9`); a percentile with
less than one observation beyond it (n x (1 - p) < 1: p99.999 below 100,000 messages), which sockperf prints
as its max, is not reported and the run is flagged FEW_OBSERVATIONS, naming it. Also
`messages_per_second` (higher is better: replies received per second of the valid duration),
`sent_messages_per_second` (higher: messages sent per second, the load) and `dropped_messages`
(count, lower). A run its timer ended echoes its `duration` (`-t`), its `[Total Run] RunTime` in whole
seconds rounded down (a busy machine ends a run late, never early: `-t 1` read 1.6 s at load 29; 0.05 s short
still counts), compared with the requested one; a run that sent faster than the requested `rate` (--mps) over its
`[Total Run]` was not paced so: PARAM_MISMATCH (sockperf prints neither -m nor --mps). An under-load run (`sockperf
ul`, `--reply-every N`) answers one message in N: its
`messages_per_second` counts replies, not the load, flagged REPLY_EVERY. A run stopped before its timer
(its first `Test end` line says `interrupted by user`, Ctrl-C, or `by signal 15`; a signal line after
`interrupted by timer` stopped nothing) is flagged INTERRUPTED. A run with `--burst N` (`Summary: Round
trip of burst of N messages`) is flagged PARAM_MISMATCH: the template sends one message at a time. The
template's primary metric is `rtt_p50_us`.

sockperf 3.7 exits 0 even when it failed. Failures: `refused` (errno 111), `unreachable`
(errno 101 network unreachable, 113 no route), `timeout` ("No messages were received from the
server": UDP has no refusal, so a missing server shows up this way), `truncated` (no statistics),
`fatal` (any other `ERROR:` line, or "No valid observations found": too few messages), `bad-argument`
(an option sockperf refused, printed with its usage text, e.g. "'-i' Invalid address", or the usage text
alone: an option it does not know).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from podtax.flags import few_observations_flag
from podtax.parsers.base import (
    Echoed,
    MetricList,
    Parsed,
    ParseFailure,
    compare_echoed,
    parse_int,
    percentile_label,
    requested_int,
    to_number,
)

TOOL = "sockperf"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_VERSION = re.compile(r"== version #([0-9][0-9A-Za-z.+~-]*) ==")
_TARGET = re.compile(r"IP = (\S+)\s+PORT =\s*(\d+) # (TCP|UDP)")
_ERROR = re.compile(r"ERROR: ([^\n]*)")  # its errno is found in the line (one lazy pattern was O(n^2) on spaces)
_ERRNO_OF = re.compile(r"\(errno=(\d+) ([^)]*)\)")
# a client mode's usage text: its options list --full-rtt from sockperf 3.6 on, as an option line (not a shell
# trace's `+ sockperf ... --full-rtt`), before `-r --range` (3.5's last option line in under-load, 3.10's fourth last
# in ping-pong): without that line the usage text is cut and says nothing of the version
_CLIENT_USAGE = re.compile(r"\nUsage: sockperf (ping-pong|under-load) ")
_FULL_RTT_LINE = re.compile(r"^[ \t]+--full-rtt\s", re.M)
_RANGE_LINE = re.compile(r"^[ \t]+-r[ \t]+--range\s", re.M)
# `avg-rtt=57.265 (std-dev=20.569)`; 3.8 and later add statistics after the std-dev (`, mean-ad=...`);
# `avg-lat=` is an older name for the one-way latency
_AVG = re.compile(r"avg-(rtt|latency|lat)=\s*([\d.]+) \(std-dev=\s*([\d.]+)[,)]")  # 3.5 and older pad: `= 6.839`
# sockperf prints every figure with 3 decimals: a last line without its newline is whole when it has all 3
_WHOLE_LAST = re.compile(r"observation =\s*[0-9]+\.[0-9]{3}[ \t]*\Z")
# A figure ends its line (or a `;`): a line cut mid-number (`3.932` -> `3.9`, a killed run) must not match.
_VALID = re.compile(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)"
                    r"(?=[ \t]*\n)")
_DROPPED = re.compile(r"# dropped messages = (\d+);")
_PCT = re.compile(r"---> percentile ([\d.]+) =\s*([\d.]+)(?=[ \t]*\n)")
_EXTREME = re.compile(r"---> <(MAX|MIN)> observation =\s*([\d.]+)(?=[ \t]*\n)")
# The first `Test end` line says what ended the run: its timer, Ctrl-C (`by user`) or another signal (SIGTERM);
# sockperf prints `by signal N` for any signal that comes after the end too (an under-load run's own SIGINT)
_END = re.compile(r"Test end \(interrupted by (timer|user|signal [0-9]+)\)")
_BURST = re.compile(r"Summary: (?:Round trip|Latency) of burst of ([0-9]+) messages")  # `--burst N`, N > 1
_INVALID = re.compile(r"sockperf: '-?-?[\w-]+' Invalid .*")
# `[Total Run] RunTime=1.000 sec; Warm up time=400 msec; SentMessages=143991; ReceivedMessages=143990`: its start
# matched, its count found in its line by str.find (`[^\n]*ReceivedMessages=` was tried from each `[Total Run]` of a
# line to its end: quadratic)
_TOTAL = re.compile(r"\[Total Run\] RunTime=([0-9.]{1,30}) sec;")
_TOTAL_RECEIVED = "ReceivedMessages="
_TOTAL_SENT = "SentMessages="
_DIGITS = re.compile(r"[0-9]+")
_MANY = 100  # replies over a whole run that leave some inside its measured window, whatever the rate
_MIN_OBSERVATIONS = 2  # one message gives one figure for every percentile and a 0 std-dev
_ERRNO = {"111": "refused", "101": "unreachable", "113": "unreachable", "110": "timeout"}
_ADVICE = {"refused": "is the sockperf server running on that address and port?",
           "unreachable": "no route to the server's address from this side",
           "timeout": "the server did not answer in time"}


def parse(text: str, test: str | None = None, requested: Mapping[str, Any] | None = None,
          recorded_version: str | None = None) -> Parsed:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    m = _VERSION.search(text)
    version = m.group(1) if m else None  # as `sockperf --version` prints it (3.7-no.git): same build, same text
    target = _TARGET.search(text)
    where = f" ({target.group(1)}:{target.group(2)} {target.group(3)})" if target else ""
    err = _ERROR.search(text)
    if err:
        errno = _ERRNO_OF.search(err.group(1))
        reason = _ERRNO.get(errno.group(1) if errno else "", "fatal")
        detail = f"sockperf: {err.group(0).strip()}{where}"
        raise ParseFailure(reason, f"{detail}: {_ADVICE[reason]}" if reason in _ADVICE else detail)
    bad = _INVALID.search(text)
    if bad:  # printed with the usage text, exit status 0
        raise ParseFailure("bad-argument", f"sockperf rejected its arguments: {bad.group(0).strip()}")
    if "No valid observations found" in text:  # exit status 0
        raise ParseFailure("fatal", _no_valid(text))
    if "No messages were received from the server" in text:
        raise ParseFailure("timeout", f"sockperf: no reply from the server{where}: is the sockperf server "
                                      "running there (UDP gives no refusal)?")
    if not text.endswith("\n") and _WHOLE_LAST.search(text):
        text += "\n"  # the file lost only its final newline (`<MIN> observation =   34.918`)
    avg = _AVG.search(text)
    valid = _VALID.search(text)
    if avg and "Summary: Message Rate is" in text:  # a ping-pong run and a throughput run in one log
        raise ParseFailure("unknown-format", "this log holds a sockperf ping-pong report and a throughput (tp) "
                                             "report; split it, one run per log")
    if not avg or not valid:
        if "[SERVER] listen on" in text or "Running as daemon" in text:
            raise ParseFailure("unknown-format", "this is a sockperf server's log (`sockperf server`), which has "
                                                 "no statistics: parse the client's output")
        if "Summary: Message Rate is" in text:  # `sockperf throughput`: a send rate, no round trips
            raise ParseFailure("unknown-format", "this is a sockperf throughput (tp) report: only ping-pong "
                                                 "(pp) and under-load (ul) reports give latencies; rerun with "
                                                 "`sockperf ping-pong`")
        usage = text.find("\nUsage: sockperf ")
        if usage >= 0:  # an option it does not know (3.7: `-n`, `--percentile`) or one given twice; exit status 0
            said = next((line for line in text[:usage].strip().split("\n") if not line.startswith("+ ")), "")
            why = f": {said}" if said and "Run sockperf" not in said else ""  # `Option -t should not be repeatable`
            if _CLIENT_USAGE.search(text) and _RANGE_LINE.search(text) and not _FULL_RTT_LINE.search(text):
                raise ParseFailure("bad-argument", f"sockperf printed its usage text instead of a report{why}; this "
                                                   "sockperf is older than 3.6 (its options list no --full-rtt, "
                                                   "which the template passes): install sockperf 3.6 or later")
            raise ParseFailure("bad-argument", f"sockperf printed its usage text instead of a report: it rejected its "
                                               f"command line{why} (an option this version does not know, or one "
                                               "given twice)")
        if m or "sockperf:" in text:
            raise ParseFailure("truncated", "the sockperf report has no statistics (cut or killed?)")
        raise ParseFailure("unknown-format", "no sockperf ping-pong report found")
    if text.find("[Valid Duration]", valid.end()) >= 0:  # two runs in one capture: neither is the answer
        raise ParseFailure("unknown-format", "this log holds several sockperf reports; split it, one run per log")
    received = to_number(valid.group(3))
    if received < _MIN_OBSERVATIONS:  # `Total 1 observations`: every percentile is that one figure
        raise ParseFailure("fatal", f"sockperf timed only {int(received)} message(s) in {valid.group(1)} s, too few "
                                    f"for a latency distribution (under {_MIN_OBSERVATIONS}): raise --time or --mps")
    kind = "rtt" if avg.group(1) == "rtt" else "latency"
    metrics = MetricList()
    metrics.add(f"{kind}_avg_us", to_number(avg.group(2)), "µs", False)
    metrics.add(f"{kind}_stddev_us", to_number(avg.group(3)), "µs", False)
    pm_end = avg.end()
    beyond: list[str] = []  # percentiles with less than one observation above them: sockperf prints the max
    for pm in _PCT.finditer(text):
        pm_end = pm.end()
        name = f"{kind}_{percentile_label(pm.group(1), 3)}_us"
        if received * (1.0 - to_number(pm.group(1)) / 100.0) < 1.0:
            beyond.append(name)
            continue
        metrics.add(name, to_number(pm.group(2)), "µs", False)
    if f"{kind}_p50_us" not in metrics:  # sockperf always prints the median: the percentiles were cut
        raise ParseFailure("truncated", "the sockperf report has no `percentile 50.000` line (cut or killed?)")
    for em in _EXTREME.finditer(text):
        metrics.add(f"{kind}_{em.group(1).lower()}_us", to_number(em.group(2)), "µs", False)
    # `<MIN>` is the block's last line: a log cut before it may have cut a percentile short (`49.557` -> `4`,
    # a newline added by whatever stored it)
    if text.find("<MIN> observation", pm_end) < 0:
        raise ParseFailure("truncated", "the sockperf report stops before its `<MIN> observation` line, the last "
                                        "of its statistics (cut or killed?)")
    seconds, sent = to_number(valid.group(1)), to_number(valid.group(2))
    flags: list[str] = []
    if beyond:
        flags.append(few_observations_flag(f"sockperf timed {int(received)} messages", beyond,
                                           "a percentile p needs at least 1/(1 - p) of them, p99.9 1,000; "
                                           "sockperf prints its max instead",
                                           f": not reported ({kind}_max_us is); raise --time or --mps"))
    if seconds > 0:
        metrics.add("messages_per_second", received / seconds, "msg/s", True)
        metrics.add("sent_messages_per_second", sent / seconds, "msg/s", True)
    flags += _rate_flag(requested, text, sent, seconds)
    if sent >= 2 * received:  # ping-pong answers every message (bar losses, counted as dropped)
        flags.append(f"REPLY_EVERY: {int(received)} of {int(sent)} messages were answered (under-load, --reply-every "
                     f"{round(sent / received)}?): messages_per_second counts the replies; the load is "
                     "sent_messages_per_second")
    stop = _END.search(text)
    if stop and stop.group(1) != "timer":
        flags.append(f"INTERRUPTED: sockperf: {stop.group(0)}: the run was stopped before its time, so its figures "
                     "cover only the part that ran")
    burst = _BURST.search(text)
    if burst:  # the template sends one message at a time: a burst's figures measure another cell
        flags.append(f"PARAM_MISMATCH: burst: sockperf sent bursts of {burst.group(1)} messages (--burst "
                     f"{burst.group(1)}); podtax's sockperf sends one at a time, and a message queued in a burst "
                     "waits for the others, so these round trips measure another cell")
    dropped = _DROPPED.search(text)
    if dropped:
        metrics.add("dropped_messages", to_number(dropped.group(1)), "count", False)
    echoed: Echoed = {"protocol": target.group(3).lower()} if target else {}
    if requested and target and str(requested.get("protocol", "")).lower() not in ("", echoed["protocol"]):
        flags.append(f"PARAM_MISMATCH: protocol echoed as {echoed['protocol']}, requested {requested['protocol']}")
    run_seconds = _total(text)[0]
    if run_seconds and (stop is None or stop.group(1) == "timer"):  # `-t 2` ran `[Total Run] RunTime=2.004 sec`
        echoed["duration"] = whole_seconds(float(run_seconds))
        flags += compare_echoed(requested, echoed, ("duration",))
    return Parsed(TOOL, version, None, metrics.as_tuple(), echoed, tuple(flags))


def whole_seconds(run_seconds: float) -> int:
    """The `-t` a run its timer ended had, from its `[Total Run] RunTime` (s, >= 0): rounded down, since a late
    timer adds time and never takes it (rounding read a `-t 1` run that ended at 1.6 s on a busy host as `-t 2`)."""
    return int(run_seconds + 0.05)


def _rate_flag(requested: Mapping[str, Any] | None, text: str, valid_sent: float, valid_seconds: float) -> list[str]:
    """PARAM_MISMATCH when the run sent faster than the requested `rate` (--mps) allows: it was not paced so (an
    unpaced run's messages go back to back). Judged on the whole run (`[Total Run]`): sockperf keeps its schedule
    from the run's start, so one that fell behind in its 400 ms warm-up catches up inside `[Valid Duration]`
    (`--mps 30000 -t 2`: 56,195 sent in the window's 1.552 s, 36,208/s, but 59,949 in the run's 2.001 s). Without
    that line the window is judged, with that catch-up (rate x 0.45 s) allowed. `--mps 10` sent 20 in 2.004 s:
    10% and 2 messages of slack."""
    rate = requested_int(requested, "rate")
    run_seconds, run_sent = _total(text, _TOTAL_SENT)
    if run_sent is not None and run_seconds and to_number(run_seconds) > 0:
        sent, seconds, catch_up = float(run_sent), to_number(run_seconds), 0.0
    else:
        sent, seconds, catch_up = valid_sent, valid_seconds, 0.45
    if not rate or seconds <= 0 or sent <= rate * (1.1 * seconds + catch_up) + 2:
        return []
    return [f"PARAM_MISMATCH: rate: sockperf sent {sent / seconds:,.0f} messages a second, over the requested "
            f"rate of {rate:,} messages a second: the run was not paced at that rate, so its round trips measure "
            f"another cell; rerun it with `--mps {rate}` (`--pps` is the same option), or, if its own rate was meant, "
            "give the cell that rate (its `rate` parameter; 0 for an unpaced run, `--mps max`)"]


def _no_valid(text: str) -> str:
    """Why sockperf found no valid observations: too few messages after its warm-up (`--mps 2`), or, when the
    run received plenty (`[Total Run] ... ReceivedMessages=143990`), none timed inside the measured window: sockperf
    3.7 with `--no-rdtsc` does so at any rate, so raising the rate or the duration would not help."""
    seconds, replies = _total(text)
    if replies is not None and replies >= _MANY:
        return (f"sockperf: No valid observations found although its run received {replies} replies in {seconds} s: "
                "none was timed inside its measured window (after the warm-up); with sockperf 3.7's `--no-rdtsc` "
                "the usual cause is its clock, not the load (rerun without it if it was given)")
    return "sockperf: No valid observations found: too few messages for the duration (raise rate or duration)"


def _total(text: str, field: str = _TOTAL_RECEIVED) -> tuple[str, int | None]:
    """The whole run's seconds and replies (or the count of another `field`) of its `[Total Run]` line (("", None)
    without one, or a count of more digits than int() reads)."""
    at = text.find("[Total Run] RunTime=")
    if at < 0:
        return "", None
    end = text.find("\n", at)
    end = len(text) if end < 0 else end
    m = _TOTAL.match(text, at, end)
    got = text.find(field, at, end)
    digits = _DIGITS.match(text, got + len(field), end) if m and got >= 0 else None
    return (m.group(1), parse_int(digits.group(0))) if m and digits else ("", None)
