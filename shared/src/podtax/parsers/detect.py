"""Which tool wrote a log: cheap substring signatures (C-speed searches), no parsing and no
multi-line regex scans (those cost ~30 µs per 10 KiB). Words are searched from the end (holds:
`rfind`, 2x faster than `in` on these words when absent, the usual case)."""

from __future__ import annotations

import re

from podtax.parsers import fio_terse, hdparm, iperf3
from podtax.parsers.base import at_line_starts, holds
from podtax.parsers.stressng_forms import BRIEF_HEADER

_SYSBENCH_WORDS = ("\nsysbench ", "Operations performed:", "Test execution summary:", "Prime numbers limit:",
                   "Number of threads:")
_SYSBENCH_STATS = ("General statistics:", "per-request statistics:")  # both need " statistics:"
_STRESSNG_WORDS = ("stress-ng: ", "stress-ng-version", "stress-ng, version", "Try 'stress-ng --help'")
_STRESSNG_BRIEF = re.compile(BRIEF_HEADER, re.M)
_HDPARM_TIMING = ("Timing cached reads", "Timing buffered disk reads", "Timing O_DIRECT")  # need "Timing "
# Blanks before `/dev/` stay on its line and every repeat is possessive: `^\s*` crossed blank lines (a run of them
# was scanned again from each of its lines: quadratic), and `[ \t]*` on both sides of the message gave back blanks
# one by one (quadratic in a line's trailing blanks).
_HDPARM_DEVICE = re.compile(r"^[^\S\n]*+/dev/[\w/.-]++:[ \t]*+(?:Operation not permitted|Permission denied"
                            r"|No such file or directory)?+[ \t]*+$", re.M)
# `"iperf 3.1.6"`: the JSON's version value, however its `"version":` is spaced; `{"event":`: --json-stream.
# Words that share a part are looked for only when it is there (one scan rules out the group, see tools_in).
_IPERF3_NAMED = ('"iperf 3.', "iperf Done.", "iperf3: error - ", "iperf3: parameter error - ", "iperf3: interrupt - ",
                 iperf3.USAGE)
_IPERF3_EVENTS = ('{"event":"start"', '{"event":"interval"', '{"event":"end"')
_FIO_NAMED = ('"fio version"', "\nfio-", ";fio-",  # ;fio-: a terse line
              "fio: engine ", "fio: failed ", "fio: pid=")  # fio's stderr when no job ran
_FIO_WORDS = ("(groupid=", "(g=0): rw=",
              ": verify failed at file ")  # `sha256: verify failed at file ...` (a verify failure's lines)


def _any(text: str, words: tuple[str, ...]) -> bool:
    find = text.rfind
    for word in words:  # noqa: SIM110 - a plain loop is faster than any() over a generator
        if find(word) >= 0:
            return True
    return False


def _device_line(text: str) -> bool:
    """`_HDPARM_DEVICE.search(text)`, tried only at the start of each line holding `/dev/` (a match
    starts at a line start and crosses only blanks to reach `/dev/`, so its line is such a line),
    once per line; after 16 such lines, the plain search from there (base.at_line_starts). Absent (the
    usual case), `/dev/` is ruled out by rfind, 4x faster than find on these logs."""
    return text.rfind("/dev/") >= 0 and next(at_line_starts(_HDPARM_DEVICE, text, "/dev/", 16), None) is not None


def tools_in(text: str) -> list[str]:
    """Every tool whose signature appears in `text`, in a fixed order."""
    head = text[:200]
    if head.lstrip().startswith("---") and "stress-ng-version" in text[:4000]:
        return ["stress-ng"]  # a --yaml report (can be 100 KiB of per-instance figures)
    found: list[str] = []
    # A word's shared part is looked for first: absent, it rules out the whole group in one scan.
    if head.startswith("sysbench ") or _any(text, _SYSBENCH_WORDS) \
            or (holds(text, " statistics:") and _any(text, _SYSBENCH_STATS)):
        found.append("sysbench")
    if (holds(text, "stress-ng") and _any(text, _STRESSNG_WORDS)) or holds(text, "cpu-method must be one of") \
            or (holds(text, " bogo ops") and _STRESSNG_BRIEF.search(text)):
        found.append("stress-ng")
    if (holds(text, "Timing ") and _any(text, _HDPARM_TIMING)) or holds(text, "HDIO_") or holds(text, hdparm.USAGE) \
            or _device_line(text):
        found.append("hdparm")
    if head.startswith("fio-") or (holds(text, "fio") and _any(text, _FIO_NAMED)) or _any(text, _FIO_WORDS) \
            or fio_terse.v2_start(text):  # terse version 2 names no `fio-`
        found.append("fio")
    if (holds(text, "iperf") and _any(text, _IPERF3_NAMED)) \
            or (holds(text, '{"event":"') and _any(text, _IPERF3_EVENTS)) or _any(text, iperf3.TEXT_MARKS):
        found.append("iperf3")
    if holds(text, "sockperf: ") and (holds(text, "== version #") or holds(text, "sockperf: ERROR")
                                      or holds(text, "sockperf: ====> avg-")  # a report without its banner
                                      or holds(text, "sockperf: Summary: Message Rate is")) \
            or holds(text, "\nUsage: sockperf "):  # a tp summary; the usage text it answers a bad option with
        found.append("sockperf")
    if head.lstrip().startswith("{"):
        start = text.find("{")
        end = text.find("\n", start)
        first = text[start:] if end < 0 else text[start:end]
        if '"kind"' in first and '"header"' in first:
            found.append("timeline")  # a control-plane timeline (JSON lines, header first)
    return found
