"""stress-ng `--yaml` reports, read with str.find (the per-instance lists can be thousands long).

Only the `metrics:` rows (indent 6 under `- stressor:`), `stress-ng-version` and the compiler are
read; per-instance figures are skipped. Metric names match the table's (see stressng.COLUMNS). A
row's other numeric keys are its miscellaneous metrics (`add-matrix-ops-per-sec: 3476.09`), named as
the table names them (`matrix_add_matrix_ops_per_sec`): stress-ng's YAML key is the description in lower
case, spaces as dashes, other punctuation dropped (`%` spelled `percent` from 0.21.04), 39 characters at most
(`MB/sec read rate` is `mbsec-read-rate`);
stressng_names reads both forms through that key and the descriptions stress-ng's sources give (`mb_sec_read_rate`,
unit MB/s, from either form).
A stressor of several instances is another matter: its YAML gives each miscellaneous metric as the arithmetic
mean over the instances, its table as their geometric mean (0.15; later ones per metric: geometric or harmonic
mean, total, maximum), 25281 against 66825 ops/s for two matrix instances of one run. Those YAML figures are
named `..._mean_over_instances`, never compared with the table's, unless the row shows one instance: its
`instances:` list (hwbench's 0.21.03 report has one, 0.15.06's none) has one entry, or, without a list, its
`cpu-usage-per-instance` is its usr+sys time over its wall-clock time. Before 0.15.00 the table printed the
arithmetic mean too. The primary row's instance count is echoed as `threads` (compared: THREADS_MISMATCH), as the
table's `dispatching hogs:` gives it: see _instance_count. A report that cannot tell it (0.11's: no
cpu-usage-per-instance) echoes none and computes no per-instance figure; a cpu row that used more CPU than the
requested instances could is flagged THREADS_MISMATCH all the same: see _more_instances.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from podtax.parsers.base import Echoed, MetricList, Parsed, ParseFailure, is_number, requested_int, to_number
from podtax.parsers.stressng_checks import beside_flag, measured, no_work_flag, refuse_no_work
from podtax.parsers.stressng_names import yaml_misc_metric
from podtax.parsers.stressng_untimed import untimed_key

_KEYS = {
    "bogo-ops": 0,
    "wall-clock-time": 1,
    "user-time": 2,
    "system-time": 3,
    "bogo-ops-per-second-real-time": 4,
    "bogo-ops-per-second-usr-sys-time": 5,
    "cpu-usage-per-instance": 6,
    "max-rss": 7,
}
# The metric columns of a stress-ng metrics row, in order: (name, unit, higher is better).
COLUMNS = (
    ("bogo_ops", "bogo ops", True),
    ("real_time", "s", False),
    ("usr_time", "s", False),
    ("sys_time", "s", False),
    ("bogo_ops_per_second_real", "bogo ops/s", True),
    ("bogo_ops_per_second_usr_sys", "bogo ops/s", True),
    ("cpu_used_per_instance", "%", True),
    ("rss_max", "KB", False),
)


@lru_cache(maxsize=4096)
def named_columns(prefix: str) -> tuple[tuple[str, str, bool], ...]:
    """COLUMNS named behind `prefix` (`cpu_` -> `cpu_bogo_ops`...): built once per stressor, not per row."""
    return tuple((prefix + name, unit, better) for name, unit, better in COLUMNS)


MIXED = ("MIXED_OUTPUT: the log holds a YAML report and a metrics table (one run with --yaml /dev/stdout, or two "
         "runs appended); figures come from ")


_REQUIRED = frozenset(range(6))  # the columns every row has (_KEYS' first six)
_ROW = "\n    - stressor: "
_SEVERAL = "this log holds several stress-ng YAML reports (a stressor has several rows); split it, one run per log"
_TOP_LINE = re.compile(r"\n[^\s]")  # a line that starts a top-level key (or the `...` end line)
_INSTANCE = "\n          - instance: "  # an entry of a row's `instances:` list


# A row's line in the common form, `      bogo-ops: 478` or `      uint64-atomic-ops-per-sec: 31659015.723896`: read as
# the line-by-line loop in parse_yaml reads it (a column, else a misc metric), the number as float() reads it (18
# digits at most before the point: no float overflows); a run of such lines from a row's start
_PLAIN_LINE = re.compile(r"      ([a-z][a-z0-9-]*+): ([0-9]{1,18}+(?:\.[0-9]++)?+)\n")
_PLAIN_LINES = re.compile(r"(?:      [a-z][a-z0-9-]*+: [0-9]{1,18}+(?:\.[0-9]++)?+\n)*+")
# A row's column lines in the order stress-ng prints them (each a _PLAIN_LINE), matched as literals in one pass: 3x
# cheaper than _PLAIN_LINE.findall over them (which must capture each key). The lines after them, or a row in another
# order, are read as before.
_NUMBER = r"([0-9]{1,18}+(?:\.[0-9]++)?+)\n"
_COLUMN_LINES = re.compile("".join(f"      {key}: {_NUMBER}" for key in (
    "bogo-ops", "bogo-ops-per-second-usr-sys-time", "bogo-ops-per-second-real-time", "wall-clock-time", "user-time",
    "system-time")) + f"(?:      cpu-usage-per-instance: {_NUMBER}(?:      max-rss: {_NUMBER})?+)?+")
_COLUMN_ORDER = (0, 5, 4, 1, 2, 3, 6, 7)  # the _KEYS column of each _COLUMN_LINES group


def _twice(stressor: str, key: str) -> str:
    """A row holding a column twice: a lost `- stressor:` line joined two stressors' blocks."""
    return f"the stress-ng YAML block of {stressor} holds `{key}` twice: a `- stressor:` line is missing"


def _top_value(text: str, key: str) -> str | None:
    at = text.find(key)
    if at < 0:
        return None
    return _value(text[at + len(key):text.find("\n", at) if text.find("\n", at) >= 0 else len(text)]) or None


def _value(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _section_end(text: str, at: int, last: int) -> int:
    """Where the `metrics:` section (`\nmetrics:` at `at`) ends: before the first `- stressor:` row whose line before
    is a top-level key (`perfstats:`, `thermal-zones:`... hold such rows too, without bogo-ops: one with it there is
    refused, a line out of place would drop it), else at the text's end (the rows' own reading stops at a top-level
    line). The lines between rows (per-instance lists, thousands long) are not read; `last` is where the text's last
    `- stressor:` row starts."""
    row = text.find(_ROW, at + 1, last + len(_ROW))
    while row >= 0:
        before = text.rfind("\n", 0, row) + 1
        if before > at + 1 and before < row and not text[before].isspace():
            after = text.find(_ROW, row + 1)  # a metrics row (its bogo-ops) after the top-level line: out of place
            if text.find("\n      bogo-ops:", row, after if after >= 0 else len(text)) >= 0:
                raise ParseFailure("unknown-format", f"the stress-ng YAML report has a metrics row after "
                                                     f"`{text[before:row][:40]}`: a line is out of place, so the log "
                                                     "is damaged")
            return before - 1
        row = text.find(_ROW, row + 1, last + len(_ROW)) if row < last else -1
    return len(text)


def _instances(text: str, start: int, end: int) -> int | None:
    """The entries of the `instances:` list in text[start:end] when they are numbered 0 to N-1 in turn, else None."""
    last = text.rfind(_INSTANCE, start, end)
    eol = text.find("\n", last + 1, end)
    number = text[last + len(_INSTANCE):eol if eol >= 0 else end].strip() if last >= 0 else ""
    if not number.isdigit() or text.count(_INSTANCE, start, end) != int(number) + 1:
        return None
    return int(number) + 1


def _single_instance(rows: list[tuple[str, list[float]]], with_misc: set[str], counts: Mapping[str, int]) -> set[str]:
    """The stressors (of `with_misc`) whose row shows one instance: its `instances:` list has one entry (`counts`),
    or without one, `cpu-usage-per-instance` is 100 x (usr + sys) / wall-clock / instances. A row that cannot tell
    (no CPU time) is taken for several."""
    single = set()
    for name, row in rows:
        if name not in with_misc:
            continue
        if name in counts:
            if counts[name] == 1:
                single.add(name)
            continue
        if len(row) < 7:  # printed since 0.12, misc metrics since 0.15
            raise ParseFailure("unknown-format", f"the stress-ng YAML row for {name} has miscellaneous metrics but no "
                                                 "cpu-usage-per-instance: a line is missing, so the log is damaged")
        if row[1] > 0 and row[6] > 0 and 0.5 < 100 * (row[2] + row[3]) / (row[1] * row[6]) < 1.5:
            single.add(name)
    return single


_WHOLE = 0.05  # how far from a whole number 100 x (usr + sys) / (wall x cpu-usage-per-instance) may be


def _instance_count(text: str, listed: tuple[int, int] | None, row: list[float]) -> int | None:
    """The instances a row is of: its `instances:` list's entries (0.21), else 100 x (usr + sys) over wall-clock x
    cpu-usage-per-instance, which stress-ng computes from those (a whole number within 0.05: 0.15.06's two cpu
    instances give 2.0000; a fixed margin, as a relative one would take any ratio once it is 25 or more). None when
    the row cannot tell (no CPU time used, or no such column)."""
    if listed is not None and (n := _instances(text, *listed)) is not None:
        return n
    if len(row) < 7 or row[1] <= 0 or row[6] <= 0 or row[2] + row[3] < 0.001:
        return None
    ratio = 100 * (row[2] + row[3]) / (row[1] * row[6])
    n = round(ratio)
    return n if n >= 1 and abs(ratio - n) <= _WHOLE else None


def _more_instances(requested: Mapping[str, Any] | None, row: list[float]) -> list[str]:
    """THREADS_MISMATCH for a cpu row that gives no instance count (0.11) but used more CPU than the requested
    instances could: a cpu instance is one process (no children), at most one CPU for its run, and stress-ng sums the
    instances' usr and sys times while its wall-clock time is their mean (0.11.07's metrics_dump), so at least
    (usr + sys) / wall-clock instances ran (0.11.07, --cpu 2 on 2 cores: 3.83 s over 2.05 s). 5% of slack for clock
    ticks; fewer instances than requested cannot be told."""
    want = requested_int(requested, "threads")
    if want is None or want < 1 or row[1] <= 0:
        return []
    least = (row[2] + row[3]) / row[1]
    if least <= want * 1.05:
        return []
    return [f"THREADS_MISMATCH: the tool ran at least {math.ceil(least - 0.05)} threads, {want} were requested (this "
            f"stress-ng YAML gives no instance count: its cpu row used {row[2] + row[3]:.2f} s of CPU in "
            f"{row[1]:.2f} s of wall-clock time, more than {want} instance(s) can)"]


def parse_yaml(text: str, test: str | None, requested: Mapping[str, Any] | None,
               primary_of: Callable[[list[tuple[str, list[float]]], str | None], str | None],
               flags_of: Callable[[Mapping[str, Any] | None, Echoed, list[float] | None], list[str]]) -> Parsed:
    if text.rfind("\n...") < 0:  # stress-ng ends the report with `...`: without it the report was cut
        raise ParseFailure("truncated", "the stress-ng YAML report has no `...` end line: it was cut")
    version = _top_value(text, "stress-ng-version:")
    compiler = _top_value(text, "compiler:")
    rows: list[tuple[str, dict[int, float]]] = []
    misc: list[tuple[str, float, str]] = []  # stressor, value, key (the description as stress-ng's YAML keys it)
    lists: dict[str, tuple[int, int]] = {}  # stressor -> where its `instances:` list is
    at = text.find("\nmetrics:")
    last = text.rfind(_ROW)  # no forward search past the last row (rfind is 2x faster here)
    section = _section_end(text, at, last) if at >= 0 else len(text)  # `perfstats:`, `thermal-zones:` rows follow
    if text.find("\nmetrics:", section) >= 0:  # reports appended to one log: neither run's figures are the answer
        raise ParseFailure("unknown-format", _SEVERAL)
    listed = at >= 0
    first = text.find(_ROW, at, section) if listed else -1
    top = _TOP_LINE.search(text, at + 1, first if first >= 0 else section) if listed else None
    head = text[at + len("\nmetrics:"):top.start() if top else first if first >= 0 else section] if listed else ""
    if head and not head.isspace():
        raise ParseFailure("unknown-format", "the stress-ng YAML report has lines under `metrics:` before any "
                                             "`- stressor:` line: that line is missing, so the log is damaged")
    if section < len(text):
        last = text.rfind(_ROW, 0, section)
    while at >= 0:
        at = text.find(_ROW, at, section)
        if at < 0:
            break
        end = text.find(_ROW, at + 1, section) if at < last else -1
        stop = text.find("\n      instances:", at, end if end >= 0 else section)
        block = text[at + len(_ROW):stop if stop >= 0 else end if end >= 0 else section]
        name, _, body = block.partition("\n")
        stressor = _value(name)
        if stop >= 0:
            lists[stressor] = (stop, end if end >= 0 else section)
        columns = _COLUMN_LINES.match(body)
        values: dict[int, float] = {} if columns is None else \
            {i: float(n) for i, n in zip(_COLUMN_ORDER, columns.groups(), strict=True) if n is not None}
        start = 0 if columns is None else columns.end()
        plain = _PLAIN_LINES.match(body, start).end()  # the lines in the common form, read in one regex pass
        for key, number in _PLAIN_LINE.findall(body, start, plain):
            column = _KEYS.get(key)
            if column is None:
                misc.append((stressor, float(number), key))
            elif column in values:
                raise ParseFailure("unknown-format", _twice(stressor, key))
            else:
                values[column] = float(number)
        rest = body[plain:]  # the other lines (another form, the next section), one by one; blank ones do nothing
        for line in rest.split("\n") if rest and not rest.isspace() else ():
            if line.startswith("      ") and not line.startswith("       "):
                key, _, rest = line[6:].partition(":")
                column = _KEYS.get(key)
                if column is not None:
                    if column in values:
                        raise ParseFailure("unknown-format", _twice(stressor, key))
                    values[column] = to_number(_value(rest))
                elif rest.strip():
                    value = _value(rest)
                    if is_number(value):
                        misc.append((stressor, float(value), key))
            elif line.strip() and not line.startswith("    "):
                break  # the next top-level section
        rows.append((stressor, values))
        at = end
    if not rows and listed:  # an empty `metrics:` in a whole report (its `...` end line): --metrics-brief
        raise ParseFailure("fatal", "the stress-ng YAML report has no `metrics:` rows: --metrics-brief leaves out a "
                                    "stressor that completed 0 bogo ops: it could not work here (see stress-ng's "
                                    "warnings; rerun with --metrics to see its row) or the run was too short for "
                                    "one bogo op (raise --timeout)")
    if not rows:
        raise ParseFailure("truncated", "the stress-ng YAML report has no `metrics:` rows")
    complete: list[tuple[str, list[float]]] = []
    for name, values in rows:
        if not values.keys() >= _REQUIRED:
            missing = [k for k, i in _KEYS.items() if i < 6 and i not in values]
            raise ParseFailure("truncated", f"the stress-ng YAML row for {name} lacks {', '.join(missing)}")
        row = [values[0], values[1], values[2], values[3], values[4], values[5]]
        for i in (6, 7):  # the optional columns, in order: a value after a gap would take the gap's name
            if i not in values:
                break
            row.append(values[i])
        complete.append((name, row))
    names = [name for name, _ in complete]
    if len(set(names)) < len(names):  # reports appended to one log (a lost `metrics:` line)
        raise ParseFailure("unknown-format", _SEVERAL)
    primary = primary_of(complete, test)
    idle = refuse_no_work(complete, primary)
    metrics = MetricList()
    for name, values in complete:
        prefix = "" if name == primary else name.replace("-", "_") + "_"
        if name not in idle:  # an idle row gives no bogo-op figure (NO_WORK), as the table's (its skipped row too)
            metrics.add_columns(named_columns(prefix), measured(values))
    with_misc = {name for name, _, _ in misc}
    counts = {name: n for name, (start, end) in lists.items()
              if name in with_misc and (n := _instances(text, start, end)) is not None}
    single = _single_instance(complete, with_misc, counts)
    prefixes = {name: ("" if name == primary else name.replace("-", "_") + "_",
                       "" if name in single else "_mean_over_instances") for name in with_misc}
    add = metrics.add
    for name, value, key in misc:
        suffix, unit, better = yaml_misc_metric(key)
        if value == 0.0 and untimed_key(value, name, key):  # a rate or time of 0: stress-ng timed nothing
            continue
        before, after = prefixes[name]
        add(before + suffix + after, value, unit, better)
    echoed: Echoed = {"stressor": primary} if primary else {"stressors": ",".join(r[0] for r in complete)}
    row = dict(complete).get(primary) if primary else None
    threads = _instance_count(text, lists.get(primary), row) if primary and row else None
    if threads is not None:  # as the table's `dispatching hogs: 2 cpu` gives it: compared (THREADS_MISMATCH)
        echoed["threads"] = threads
    flags = flags_of(requested, echoed, row) + [no_work_flag(name) for name in idle]
    if threads is None and primary == "cpu" and row:  # no count: the CPU used may still prove more instances
        flags += _more_instances(requested, row)
    if primary and test == "stress-ng-cpu":  # no run time in the report: a --sequential run is flagged too
        flags += beside_flag(complete, primary, None)
    if "(secs)" in text[text.rfind("\n..."):]:  # a table after the report (its units line)
        flags.append(MIXED + "the YAML report")
    return Parsed("stress-ng", version, compiler, metrics.as_tuple(), echoed, tuple(flags))
