"""fio's text report, its groups: `Run status group N` summaries checked against their jobs' rates (STAGGERED),
and the figures (`io=` KiB, powers of a unit) the job lines share with them (see podtax.parsers.fio_text)."""

from __future__ import annotations

import re

from podtax.parsers import fio_kb_base
from podtax.parsers.base import at_line_starts, size_bytes, to_number
from podtax.parsers.fio_flags import staggered_flag

STATUS = re.compile(r"^Run status group ([0-9]{1,6}) \(all jobs\):", re.M)
STATUS_WORD = "Run status group "  # on each line STATUS matches (see base.at_line_starts: 1 µs, not 11, in 3 KiB)
# A group's summary line, fio 3 (`READ: bw=41.3MiB/s (43.3MB/s), ...`) and 2 (`READ: io=..., aggrb=1023KB/s, ...`)
_GROUP_BW = re.compile(r"^[ \t]*(READ|WRITE|TRIM|MIXED): (?:bw=([\d.]+)([kKMGTP]?)(i?)(?:B|bit)/s|io=[^,\n]*, "
                       r"aggrb=([\d.]+) ?([KMGT]?i?(?:B|bit))/s)", re.M)
_GROUP_IO = re.compile(r"io=([\d.]+)([kKMGTP]?)(i?)B[^,\n]*, run=[0-9]{1,12}-([0-9]{1,12})msec")
POWER = {"": 0, "k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}


def kib(value: str, unit: str) -> float:
    """A fio 2 rate in KiB/s, its `K` read as 1024 (fio_kb_base reads it again where it was 1000): `KB`, `MB`, `B`,
    or bits with unit_base=1 (`Kbit`, `Mbit`, `bit`: fio multiplied the bytes by 8)."""
    bits = unit.endswith("bit")
    factor = size_bytes("1" + unit.removesuffix("bit").removesuffix("B").replace("i", ""))
    return to_number(value) * (factor or 1.0) / (8192 if bits else 1024)


def unit_power(unit: str) -> int:
    """The power of 1000 or 1024 of a fio 2 unit (`KB` 1, `Mbit` 2, `B` 0); -1 for one that says which (`KiB`)."""
    return -1 if "i" in unit.removesuffix("bit") else "_KMGT".find(unit[0])


def io_kib(m: re.Match[str]) -> float:
    """KiB of an `io=` figure matched as (number, power, `i`)."""
    return to_number(m.group(1)) * (1024 if m.group(3) else 1000) ** POWER[m.group(2)] / 1024


def staggered(text: str, jobs: list[tuple[str, str, dict[str, float]]], spans: dict[tuple[int, str], float],
               decimal: set[str]) -> list[str]:
    """A flag when fio's own summary of a group (`Run status group N`: its bytes over the span from the
    first job's start to the last one's end) is over 3% below the sum of its jobs' rates: the jobs did not
    all run at once (startdelay, different runtimes), so the sum overstates what ran side by side. Where
    fio 3 prints each job's KiB and runtime (`(4096KiB/34msec)`) and the group's (`io=8192KiB ...,
    run=34-36msec`), the jobs' rates and the group's KiB over its longest runtime come from those, as the JSON
    parser's do (the rates' 3 digits tipped a run 2.9% apart in JSON over 3% in text); fio's group rate is
    kept when it is lower beyond its rounding (startdelay: a span longer than any job's runtime). A fio 2 group in
    `decimal` printed its `aggrb` in powers of 1000 (fio_kb_base), as its jobs' rates."""
    flags = []
    sums: dict[tuple[str, str], float] = {}  # (group, direction) -> the jobs' summed rate
    members: dict[tuple[str, str], list[int]] = {}  # (group, direction) -> its jobs' numbers from 1
    for i, (_, group, f) in enumerate(jobs, 1):
        for key, value in f.items():
            if key.endswith("_bw"):
                d = key[:-3]
                sums[(group, d)] = sums.get((group, d), 0.0) + value
                members.setdefault((group, d), []).append(i)
    exact_sums = {key: sum(spans[(i, key[1])] for i in ids) for key, ids in members.items()
                  if all((i, key[1]) in spans for i in ids)}  # every job's KiB over its runtime printed
    starts = list(at_line_starts(STATUS, text, STATUS_WORD))  # STATUS.finditer, tried at lines holding the word
    for k, m in enumerate(starts):  # a group's block: to its blank line, or the next group's line (none: damaged)
        after = starts[k + 1].start() if k + 1 < len(starts) else len(text)
        end = text.find("\n\n", m.end(), after)
        for line in _GROUP_BW.finditer(text, m.end(), end if end >= 0 else after):
            direction = line.group(1).lower()
            if line.group(2):
                fio = to_number(line.group(2)) * (1024 if line.group(4) else 1000) ** POWER[line.group(3)] \
                    / (8192 if line.group(0)[-5] == "b" else 1024)
            else:
                fio = fio_kb_base.group_rate(kib(line.group(5), line.group(6)), line.group(6), m.group(1) in decimal)
            total = sums.get((m.group(1), direction), 0.0)
            eol = text.find("\n", line.end())
            io = _GROUP_IO.search(text, line.end(), eol if eol >= 0 else len(text))
            if io and io.group(4) != "0" and (m.group(1), direction) in exact_sums:
                exact = io_kib(io) * 1000 / int(io.group(4))  # over the longest runtime, as the JSON parser's
                fio = fio if fio and fio < 0.99 * exact else exact  # below beyond rounding: a longer span (startdelay)
                total = exact_sums[(m.group(1), direction)]
            if fio and total > fio * 1.03:
                flags.append(staggered_flag(f"fio's summary of group {m.group(1)} gives {direction} bw={fio:.0f} "
                                            "KiB/s", total))
    return flags
