"""What a stress-ng log's messages set in the scan of the log (stressng.py reads its lines): the Scan and the
handlers of the messages named by their first word (`dispatching hogs:`, `successful run completed`, `failed:`,
`skipped:`, `passed:`, a verbose log's `stress-ng 0.19.02`, `metrics untrustworthy:`, `setting to a 60 second run`).
Pure functions of a message and the Scan they fill."""

from __future__ import annotations

import re
from functools import lru_cache

from podtax.parsers.base import parse_int
from podtax.parsers.stressng_checks import Row

# `setting to a 60 second run`, `a 1 min, 30 secs run`, `a 1 min run`, `defaulting to a 86400 second (1 day, ...`
_SETTING = re.compile(r"^(?:setting to|defaulting to) an? ((?:[0-9]{1,9} (?:day|hour|min|sec|second)s?,? ?)+)")
_DURATION = re.compile(r"([0-9]+) (day|hour|min|sec)")
_SECONDS = {"day": 86400, "hour": 3600, "min": 60, "sec": 1}
Misc = tuple[str, float, str]  # stressor, value, description as printed (see stressng_names.misc_metric)


class Scan:
    __slots__ = ("rows", "misc", "header", "hogs", "dispatches", "completed", "failed", "untrusted", "errors",
                 "bad_arg", "timeout", "seen", "yaml", "skipped", "passed", "version", "columns", "cut", "premature",
                 "completions", "closed", "took")

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.misc: list[Misc] = []
        self.header = 0  # table headers: one per run
        self.hogs = ""
        self.dispatches = 0  # `dispatching hogs:` lines: one per run
        self.completed = False
        self.completions = 0  # `successful run completed` lines: one per run
        self.closed = False  # that line came after a table's header (0.15+): the table above it is whole
        self.failed = 0
        self.untrusted = 0
        self.errors: list[str] = []
        self.bad_arg: list[str] = []
        self.timeout: int | None = None
        self.seen = False
        self.yaml = False  # a `--yaml` report's `metrics:` line
        self.skipped = 0  # `skipped: 1: cpu (1)`: instances that never ran (out of resources, unsupported)
        self.passed: int | None = None  # `passed: 3: cpu (3)`, when printed (0.15 and later)
        self.version: str | None = None  # a verbose log's `debug: [357] stress-ng 0.19.02 g35e617844d9b`
        self.columns = 6  # figures in a row under the table's header (see stressng_checks.refuse_damaged_rows)
        self.cut = ""  # why the first row cut inside a figure is (see stressng._line)
        self.premature: list[str] = []  # `WARNING: finished prematurely after just 2.46 secs` (an instance's)
        self.took: float | None = None  # `successful run completed in 3.15s` (`in 24 mins, 2.77 secs`): its seconds


def _hogs(s: Scan, msg: str) -> None:
    if msg.startswith("dispatching hogs:"):
        s.hogs = msg[len("dispatching hogs:"):].strip()
        s.dispatches += 1


def _completed(s: Scan, msg: str) -> None:
    if msg.startswith("successful run completed"):
        s.completed = True
        s.completions += 1
        s.closed = s.header > 0
        s.took = _took(msg)
    elif msg.startswith("unsuccessful run completed"):
        s.errors.append(msg)


def _failed(s: Scan, msg: str) -> None:
    s.failed = _count(msg)


def _skipped(s: Scan, msg: str) -> None:
    s.skipped = _count(msg)


def _passed(s: Scan, msg: str) -> None:
    s.passed = _count(msg)


def _version(s: Scan, msg: str) -> None:
    m = _VERSION.match(msg)
    if m and s.version is None:
        s.version = m.group(1)


def _untrusted(s: Scan, msg: str) -> None:
    if msg.startswith("metrics untrustworthy:"):
        s.untrusted = _count(msg)


def _setting(s: Scan, msg: str) -> None:
    seconds = _run_seconds(msg)
    if seconds is not None:
        s.timeout = seconds


@lru_cache(maxsize=256)  # the few timeouts of a campaign print the same line in every log
def _run_seconds(msg: str) -> int | None:
    """`setting to a 1 min, 30 secs run per stressor` -> 90 (None for no such line)."""
    t = _SETTING.match(msg)
    return sum(int(n) * _SECONDS[unit] for n, unit in _DURATION.findall(t.group(1))) if t else None


def _took(msg: str) -> float | None:
    """The whole run's seconds of `successful run completed in 3.15s` (0.15 and before), `... in 30.84 secs` or
    `... in 24 mins, 2.77 secs` (0.16 and later): 3.15, 30.84, 1442.77 (None for another line)."""
    took = _TOOK.match(msg)
    if not took:
        return None
    units = sum(int(n) * _SECONDS[unit] for n, unit in _DURATION.findall(took.group(1)))
    return units + float(took.group(2))


# `3.15s`, `3.15s (1 min, 3.15 secs)`, `30.84 secs`, `1 min, 1.14 secs`, `24 mins, 2.77 secs`
_TOOK = re.compile(r"successful run completed in ((?:[0-9]{1,9} (?:day|hour|min)s?, ){0,3})"
                   r"([0-9]{1,12}(?:\.[0-9]{1,9})?)(?:s| secs?)")
_VERSION = re.compile(r"stress-ng ([0-9]+\.[0-9]+\.[0-9]+)(?: |$)")
HANDLERS = {"dispatching": _hogs, "successful": _completed, "unsuccessful": _completed, "failed:": _failed,
             "skipped:": _skipped, "passed:": _passed, "stress-ng": _version,
             "metrics": _untrusted, "setting": _setting, "defaulting": _setting}


def _count(msg: str) -> int:
    value = msg.split(":", 1)[1].strip().split(" ", 1)[0].rstrip(":")
    return parse_int(value) or 0
