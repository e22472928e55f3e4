"""Which tool wrote a log: cheap substring signatures (C-speed searches), no parsing and no
multi-line regex scans (those cost ~30 µs per 10 KiB). A word is looked for only when its rarest character
(base.guard) is in the log: absent, the usual case when a log is tested for another tool's words, one memchr
rules the word out. Words are searched from the end (base.holds: `rfind`, 2x faster than `in` on these words
when absent)."""

from __future__ import annotations

import re

from podtax.parsers import fio_terse, hdparm, iperf3
from podtax.parsers.base import at_line_starts, guard, guarded, holds_any
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
# Words that share a part are looked for only when it is there (one scan rules out the group, see tools_in); every
# word, only when its guard is there (see base.guard).
_IPERF3_NAMED = ('"iperf 3.', "iperf Done.", "iperf3: error - ", "iperf3: parameter error - ", "iperf3: interrupt - ",
                 iperf3.USAGE)
_IPERF3_EVENTS = ('{"event":"start"', '{"event":"interval"', '{"event":"end"')
_FIO_NAMED = ('"fio version"', "\nfio-", ";fio-",  # ;fio-: a terse line
              "fio: engine ", "fio: failed ", "fio: pid=")  # fio's stderr when no job ran
_FIO_WORDS = ("(groupid=", "(g=0): rw=",
              ": verify failed at file ")  # `sha256: verify failed at file ...` (a verify failure's lines)


_STRESSNG_HELP = "cpu-method must be one of"
# sockperf: the first word, with one of the next four (`====> avg-`: a report without its banner; `Summary: Message
# Rate is`: a tp summary), or the last (the usage text it answers a bad option with)
_SOCKPERF = ("sockperf: ", "== version #", "sockperf: ERROR", "sockperf: ====> avg-",
             "sockperf: Summary: Message Rate is", "\nUsage: sockperf ")
_GUARD = {word: guard(word) for word in (" statistics:", "stress-ng", _STRESSNG_HELP, " bogo ops", "Timing ", "HDIO_",
                                          hdparm.USAGE, "/dev/", "fio", "iperf", '{"event":"', _SOCKPERF[0],
                                          _SOCKPERF[-1])}
_SYSBENCH_ANY, _SYSBENCH_STATS_ANY = guarded(*_SYSBENCH_WORDS), guarded(*_SYSBENCH_STATS)
_STRESSNG_ANY, _HDPARM_TIMING_ANY = guarded(*_STRESSNG_WORDS), guarded(*_HDPARM_TIMING)
_FIO_NAMED_ANY, _FIO_WORDS_ANY = guarded(*_FIO_NAMED), guarded(*_FIO_WORDS)
_IPERF3_NAMED_ANY, _IPERF3_EVENTS_ANY = guarded(*_IPERF3_NAMED), guarded(*_IPERF3_EVENTS)
_IPERF3_TEXT_ANY, _SOCKPERF_ANY = guarded(*iperf3.TEXT_MARKS), guarded(*_SOCKPERF[1:-1])


def _has(text: str, word: str) -> bool:
    """`word in text` (base.holds), ruled out first by the word's guard (base.guard)."""
    return text.find(_GUARD[word]) >= 0 and text.rfind(word) >= 0


def _device_line(text: str) -> bool:
    """`_HDPARM_DEVICE.search(text)`, tried only at the start of each line holding `/dev/` (a match
    starts at a line start and crosses only blanks to reach `/dev/`, so its line is such a line),
    once per line; after 16 such lines, the plain search from there (base.at_line_starts). Absent (the
    usual case), `/dev/` is ruled out by its guard or rfind, 4x faster than find on these logs."""
    return _has(text, "/dev/") and next(at_line_starts(_HDPARM_DEVICE, text, "/dev/", 16), None) is not None


def _v2_start(text: str) -> bool:
    """fio_terse.v2_start (terse version 2 names no `fio-`): a `2;` at the log's start or a line's in its first 4 KiB,
    so a `;` there, ruled out by one memchr in nearly every log (its `\\n2;` search costs 1 µs a log)."""
    return text.find(";", 0, 4096) >= 0 and fio_terse.v2_start(text)


def tools_in(text: str) -> list[str]:
    """Every tool whose signature appears in `text`, in a fixed order."""
    head = text[:200]
    if head.lstrip().startswith("---") and "stress-ng-version" in text[:4000]:
        return ["stress-ng"]  # a --yaml report (can be 100 KiB of per-instance figures)
    found: list[str] = []
    # A word's shared part is looked for first: absent, it rules out the whole group in one scan.
    if head.startswith("sysbench ") or holds_any(text, _SYSBENCH_ANY) \
            or (_has(text, " statistics:") and holds_any(text, _SYSBENCH_STATS_ANY)):
        found.append("sysbench")
    if (_has(text, "stress-ng") and holds_any(text, _STRESSNG_ANY)) or _has(text, _STRESSNG_HELP) \
            or (_has(text, " bogo ops") and _STRESSNG_BRIEF.search(text)):
        found.append("stress-ng")
    if (_has(text, "Timing ") and holds_any(text, _HDPARM_TIMING_ANY)) or _has(text, "HDIO_") \
            or _has(text, hdparm.USAGE) or _device_line(text):
        found.append("hdparm")
    if head.startswith("fio-") or (_has(text, "fio") and holds_any(text, _FIO_NAMED_ANY)) \
            or holds_any(text, _FIO_WORDS_ANY) or _v2_start(text):
        found.append("fio")
    if (_has(text, "iperf") and holds_any(text, _IPERF3_NAMED_ANY)) \
            or (_has(text, '{"event":"') and holds_any(text, _IPERF3_EVENTS_ANY)) or holds_any(text, _IPERF3_TEXT_ANY):
        found.append("iperf3")
    if (_has(text, _SOCKPERF[0]) and holds_any(text, _SOCKPERF_ANY)) or _has(text, _SOCKPERF[-1]):
        found.append("sockperf")
    if head.lstrip().startswith("{"):
        start = text.find("{")
        end = text.find("\n", start)
        first = text[start:] if end < 0 else text[start:end]
        if '"kind"' in first and '"header"' in first:
            found.append("timeline")  # a control-plane timeline (JSON lines, header first)
    return found
