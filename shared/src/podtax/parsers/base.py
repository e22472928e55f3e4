"""Types and small helpers shared by every tool parser (no tool knowledge here)."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from podtax.events import Metric

Echoed = dict[str, str | int | float]
_INT_DIGITS = sys.get_int_max_str_digits() or 4300


class ParseFailure(Exception):
    """A log that cannot yield trustworthy figures; `reason` is a stable code, `detail` a sentence."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


_NEW_DICT: Any = object()  # Parsed's echoed when none is given: a new empty dict (the field's default_factory)


@dataclass(frozen=True)
class Parsed:
    tool: str
    tool_version: str | None
    tool_build: str | None
    metrics: tuple[Metric, ...]
    echoed: Echoed = field(default_factory=dict)
    flags: tuple[str, ...] = ()

    def __init__(self, tool: str, tool_version: str | None, tool_build: str | None, metrics: tuple[Metric, ...],
                 echoed: Echoed = _NEW_DICT, flags: tuple[str, ...] = ()) -> None:
        """The dataclass's own __init__, with its fields set in one step: a frozen dataclass sets each through
        object.__setattr__ (0.7 µs a result, once per log parsed; this 0.3)."""
        _set_parsed_dict(self, {"tool": tool, "tool_version": tool_version, "tool_build": tool_build,
                                "metrics": metrics, "echoed": {} if echoed is _NEW_DICT else echoed, "flags": flags})

    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(name)

    def values(self) -> dict[str, float]:
        return {m.name: m.value for m in self.metrics}


_set_parsed_dict = Parsed.__dict__["__dict__"].__set__  # a new instance's dict, set as a whole


_FIELDS = frozenset(Metric.model_fields)
_new = object.__new__
# pydantic's slot setters, called directly: cheaper than object.__setattr__ by name.
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_set_dict = BaseModel.__dict__["__dict__"].__set__  # the instance dict's slot: 10% cheaper than by name


def make_metric(name: str, value: float, unit: str, higher_is_better: bool) -> Metric:
    """A Metric without re-validation (the parser already checked each field); 4x faster than
    `Metric.model_construct`, and equal to `Metric(...)` built from the same values."""
    metric = _new(Metric)
    _set_dict(metric, {"name": name, "value": value, "unit": unit, "higher_is_better": higher_is_better})
    _set_fields(metric, _FIELDS)
    _set_extra(metric, None)
    _set_private(metric, None)
    return metric


def _not_a_figure(name: str, value: float) -> ParseFailure:
    if value < 0.0:  # a rate, time, size or count below zero: a damaged log, or a tool's sentinel let through
        return ParseFailure("unknown-format", f"{name} is negative ({value!r}): no figure a benchmark reports "
                                              "is below zero, so the log is damaged")
    return ParseFailure("unknown-format", f"{name} is not a finite number ({value!r})")


class MetricList:
    """Collects metrics in order; refuses NaN/inf and negative values (a damaged log) and keeps the
    first of duplicate names."""

    __slots__ = ("items", "names")

    def __init__(self) -> None:
        self.items: list[Metric] = []
        self.names: set[str] = set()

    def add(self, name: str, value: float, unit: str, higher_is_better: bool) -> None:
        if value - value != 0.0 or value < 0.0:  # NaN, infinite or negative
            raise _not_a_figure(name, value)
        names = self.names
        if name not in names:
            try:
                value = float(value)
            except OverflowError:  # an integer (a JSON count) of hundreds of digits: no float holds it
                raise _not_a_figure(name, math.inf) from None
            names.add(name)
            metric = _new(Metric)
            _set_dict(metric, {"name": name, "value": value, "unit": unit, "higher_is_better": higher_is_better})
            _set_fields(metric, _FIELDS)
            _set_extra(metric, None)
            _set_private(metric, None)
            self.items.append(metric)

    def add_columns(self, columns: Sequence[tuple[str, str, bool]], values: Sequence[float | None]) -> None:
        """`add(name, value, unit, better)` for each column (name, unit, better) and value (the shorter one
        wins; a None value, not measured, is left out); the same checks as :meth:`add`, without a method
        call per metric."""
        names, append = self.names, self.items.append
        for (name, unit, better), value in zip(columns, values, strict=False):
            if value is None:
                continue
            if value - value != 0.0 or value < 0.0:  # NaN, infinite or negative
                raise _not_a_figure(name, value)
            if name not in names:
                names.add(name)
                metric = _new(Metric)
                _set_dict(metric, {"name": name, "value": float(value), "unit": unit,
                                          "higher_is_better": better})
                _set_fields(metric, _FIELDS)
                _set_extra(metric, None)
                _set_private(metric, None)
                append(metric)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def as_tuple(self) -> tuple[Metric, ...]:
        return tuple(self.items)


def refuse_inconsistent_rates(tool: str, metrics: MetricList, seconds_name: str,
                              pairs: Sequence[tuple[str, str]]) -> None:
    """Each (rate, count) pair must agree with the run's time: rate ~= count / seconds. A tool computes
    one from the others (sysbench: within 2% in every real report of a second or more seen), so a rate more
    than 10% off was edited or damaged (an audit's forged log: `events per second: 0.00` beside 100 events in
    10 s). Runs under a second are not judged: there the time's printed 4 decimals and the tool's start-up
    make the two differ by up to 2x (sysbench memory: 2,048 operations in 0.0006 s, reported 1.73 M/s)."""
    values = {m.name: m.value for m in metrics.items}
    seconds = values.get(seconds_name, 0.0)
    for rate_name, count_name in pairs:
        rate, count = values.get(rate_name), values.get(count_name)
        if rate is None or not count or seconds < 1.0:
            continue
        derived = count / seconds
        if not 0.9 <= rate / derived <= 1.1:
            raise ParseFailure("unknown-format", f"{tool}'s figures disagree: {count:g} {count_name} in {seconds:g} s "
                                                 f"is {derived:,.2f} a second, but it reports {rate_name} {rate:,.2f}: "
                                                 "the log was edited or damaged")


def errors_flag(tool: str, said: str) -> str:
    """The flag of a log whose report parsed but which also holds the tool's error lines: another run,
    appended, that failed (a retry after a failure), or a failure the report does not show."""
    return (f"ERRORS: the log also holds {tool}'s error line(s) beside the report read (another run that "
            f"failed?): {said[:300]}")


def holds(text: str, word: str) -> bool:
    """`word in text`, searched from the end. `in` tests each window on the word's LAST character,
    rfind on its FIRST: for words that start with a rare character (an uppercase letter, `(`, `"`)
    and end with a common one (a letter, `:`, a space), rfind skips ahead 2-3x faster when the word
    is absent, the usual case when a log is tested for another tool's or test's words."""
    return text.rfind(word) >= 0


# Printable characters, the rarest in logs first (how many of the corpus' logs hold each one): see guard.
_RARITY = "&^*\\Q?`Z$~<H@VX'!Y|F+;#JUW}{O\"G%K>jAEBCqLDNP=zIMR_ST/()[],xwkyh5789vm6b-3:lpd4afgu2crtes n.io10\n"


def guard(word: str) -> str:
    """The rarest character of `word` (a character not ranked counts as the rarest): absent from a log, so is
    the word. `text.find(guard(word)) >= 0 and holds(text, word)` is `holds(text, word)`, but a log without the
    guard is ruled out by one memchr (`str.find` of one character: ~0.1 µs over 4 KiB, and quicker when it is
    there, found early) where the word's search costs ~1 µs. The order only makes that faster or slower."""
    return min(word, key=lambda c: (_RARITY.find(c), c))


Guarded = tuple[tuple[str, str], ...]  # (guard, word) pairs: see guard


def guarded(*words: str) -> Guarded:
    return tuple((guard(word), word) for word in words)


def holds_any(text: str, words: Guarded) -> bool:
    """Any of `words` is in `text`: each looked for only when its guard is (see guard), then from the end (holds)."""
    find, rfind = text.find, text.rfind
    for first, word in words:  # noqa: SIM110 - a plain loop is faster than any() over a generator
        if find(first) >= 0 and rfind(word) >= 0:
            return True
    return False


def at_line_starts(pattern: re.Pattern[str], text: str, word: str, limit: int = -1) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)` for a pattern that starts at a line start (`^`, MULTILINE), stays on its line and
    holds `word`: tried only at the start of each line holding `word`, found by str.find, once per line (the
    regex engine tries every position of the log instead: 5-8 µs for a 1.4 KiB fio report). After `limit` such
    lines (-1: no limit), the plain finditer from the next one: a log of many such lines is scanned in C."""
    at = text.find(word)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        if limit == 0:
            yield from pattern.finditer(text, start)
            return
        limit -= 1
        m = pattern.match(text, start)
        if m:
            yield m
        end = text.find("\n", at)
        if end < 0:
            return
        at = text.find(word, end)


def to_number(text: str) -> float:
    """A decimal number as printed by a tool; raises ParseFailure when it is not one."""
    try:
        value = float(text)
    except ValueError:
        raise ParseFailure("unknown-format", f"expected a number, found {text[:40]!r}") from None
    if value - value != 0.0:  # NaN or infinite
        raise ParseFailure("unknown-format", f"expected a finite number, found {text[:40]!r}")
    return value


@lru_cache(maxsize=1024)
def percentile_label(text: str, places: int = 6) -> str:
    """`99.900000` -> `p99_9`, `50` -> `p50` (rounded to `places` decimals); ParseFailure for what is
    no percentile between 0 and 100 (`nan`, `150`, `1.2.3`: a damaged label, not a metric name)."""
    try:
        number = float(text)
    except ValueError:
        number = -1.0
    if not 0.0 <= number <= 100.0:  # also NaN
        raise ParseFailure("unknown-format", f"{text[:40]!r} is not a percentile (0 to 100): the log is damaged")
    return "p" + f"{number:.{places}f}".rstrip("0").rstrip(".").replace(".", "_")


def is_number(text: str) -> bool:
    """`text` reads as a finite number (`nan` and `inf` do not: a figure printed so is no figure)."""
    try:
        value = float(text)
    except ValueError:
        return False
    return value - value == 0.0


def parse_int(text: str) -> int | None:
    """`int(text)` for a string of decimal digits, None for anything else: `²` (a digit to isdigit() but
    not to int()) or a number longer than int() reads (over 4,300 digits) is refused, not raised."""
    if text.isdecimal() and len(text) <= _INT_DIGITS:
        return int(text)
    return None


def int_or_float(value: float) -> int | float:
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


# From the start of a run of digits only (the leftmost match starts there anyway): tried at each digit of a long run,
# `\d+\.` scanned the rest of it each time (a recorded version of 30,000 digits took 1.7 s)
_VERSION = re.compile(r"(?<!\d)(\d++\.\d+(?:\.\d+)*[0-9A-Za-z.+~-]*)")
_BUILD = re.compile(r"\(([^()]*)\)")


def version_from(recorded: str | None) -> tuple[str | None, str | None]:
    """`stress-ng, version 0.15.06 (gcc 12.2.0, x86_64 Linux ...)` -> ("0.15.06", "gcc 12.2.0, ...")."""
    if not recorded:
        return None, None
    first = recorded.strip().splitlines()[0] if recorded.strip() else ""
    m = _VERSION.search(first)
    if not m:
        return None, None
    build = _BUILD.search(first, m.end())
    return m.group(1).rstrip(".-"), (build.group(1).strip() or None) if build else None


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(i?B|b)?\s*$", re.I)
_POW = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}


def size_bytes(text: str) -> float | None:
    """`1K`, `1KiB`, `1024KiB`, `102400MiB` -> bytes (binary multiples, as sysbench and fio use)."""
    m = _SIZE.match(str(text))
    if not m:
        return None
    return float(m.group(1)) * 1024 ** _POW[m.group(2).upper()]


_BOOL_WORDS = {"1": True, "on": True, "t": True, "true": True, "y": True, "yes": True,  # as pydantic reads a bool
               "0": False, "off": False, "f": False, "false": False, "n": False, "no": False}
_WORDS_ONLY = frozenset(_BOOL_WORDS) - {"0", "1"}  # words that can only be a boolean ("1" may be a count)


def _bool_word(value: Any) -> bool:
    """A text that can only mean a boolean (only a str can be one: no other value prints as such a word)."""
    return isinstance(value, str) and value.strip().lower() in _WORDS_ONLY


def same_value(requested: Any, echoed: Any) -> bool:
    """A requested param (a manifest's text such as `reverse=true`, or a campaign's value) equals what
    the log echoed (`"reverse": 1`): booleans by their words, numbers by value, sizes in bytes."""
    if isinstance(requested, bool) or isinstance(echoed, bool) or _bool_word(requested) or _bool_word(echoed):
        words = [str(v).strip().lower() for v in (requested, echoed)]
        return _BOOL_WORDS.get(words[0], requested) == _BOOL_WORDS.get(words[1], echoed)
    try:
        return float(requested) == float(echoed)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer of hundreds of digits
        pass
    a, b = size_bytes(str(requested)), size_bytes(str(echoed))
    if a is not None and b is not None:
        return a == b
    return str(requested).strip().lower() == str(echoed).strip().lower()


def compare_echoed(requested: Mapping[str, Any] | None, echoed: Echoed,
                   keys: tuple[str, ...], threads_key: str = "threads") -> list[str]:
    """Flags for echoed parameters that contradict the requested ones."""
    flags: list[str] = []
    if not requested:
        return flags
    req_threads = requested.get("threads")
    if threads_key in echoed and isinstance(req_threads, int) and not isinstance(req_threads, bool) \
            and req_threads != echoed[threads_key]:
        flags.append(f"THREADS_MISMATCH: the tool ran {echoed[threads_key]} threads, "
                     f"{req_threads} were requested")
    for key in keys:
        if key in requested and key in echoed and not same_value(requested[key], echoed[key]):
            flags.append(f"PARAM_MISMATCH: {key} echoed as {echoed[key]}, requested {requested[key]}")
    return flags


def requested_int(requested: Mapping[str, Any] | None, key: str) -> int | None:
    if not requested:
        return None
    value = requested.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return parse_int(value)
    return None
