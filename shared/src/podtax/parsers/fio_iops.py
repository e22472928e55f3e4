"""fio's text report, its IOPS figures: fio prints each cut from its I/Os over its runtime, so where the report
gives both (`issued` and the runtime) the figure is read exactly as the JSON gives it (see podtax.parsers.fio_text)."""

from __future__ import annotations

import math
import re

COUNT_SCALE = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}  # a figure's suffix (`17.6k` IOPS, `1506.6K` µs)


def step(number: str, suffix: str) -> float:
    """The unit of a printed IOPS figure's last digit: 1 for `7505`, 100 for `17.6k`."""
    point = number.find(".")
    return COUNT_SCALE[suffix] / 10 ** (len(number) - point - 1 if point >= 0 else 0)


def old_num2str(num: int, kind: str, thousand: int = 1000) -> float:
    """`num` as fio's num2str(num, 4, 1, 0, N2S_NONE) printed it before its fixes (fio 2.20; fio 3.26, c736b361),
    read back: kind "2.17" (fio 2.17-2.19: the part after the point loses its leading zeros, 19042 as `19.5k`,
    10009 as `10.9k`) or "3.0" (fio 3.0-3.25: no carry into the whole part, 19961 as `19.0k`, 10996 as `10.0k`).
    thousand=1024: a rate in powers of 1024 (fio 3.25 prints 21978000 B/s as `20.0MiB/s`, 20.96 MiB/s)."""
    power = 0
    modulo = None
    while len(str(num)) > 4:
        modulo, num, power = num % thousand, num // thousand, power + 1
    if modulo is None:
        return float(num)
    if len(str(num)) >= 3:  # no room for a decimal: rounded with its carry (right in every version)
        return (num + (modulo >= thousand // 2)) * float(thousand) ** power
    if kind == "2.17":
        while len(str(modulo)) > 3 - len(str(num)):
            modulo = (modulo + 9) // 10
        decimals = str(modulo)
    else:
        decimals = f"{modulo / thousand:.{3 - len(str(num))}f}"[2:]
    return float(f"{num}.{decimals}") * float(thousand) ** power


def buggy_kinds(version: str | None) -> tuple[str, ...]:
    """The old num2str of a fio version (both when the log does not tell it)."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    if m is None:
        return ("2.17", "3.0")
    major, minor = int(m.group(1)), int(m.group(2))
    return ("2.17",) if major == 2 and 17 <= minor <= 19 else ("3.0",) if major == 3 and minor <= 25 else ()


def exact_iops(jobs: list[tuple[str, str, dict[str, float]]], runtimes: dict[tuple[int, str], int],
               counts: dict[tuple[int, str], int], steps: dict[tuple[int, str], float],
               version: str | None = None) -> tuple[list[tuple[int, str]], list[str]]:
    """Each direction's IOPS as fio's JSON gives it, its I/Os x 1000 / its runtime in ms, where fio printed that
    quotient cut to a whole number (`iops = 1000 * total_io_u / runt` in integers, fio 1.16 to 3.33) and then,
    from 10,000, to 3 significant digits: a job of few IOPS reads far low so (`IOPS=4` for 10 I/Os in 2001 ms,
    4.9975 in the JSON of the same run: 20%), and `IOPS=17.6k` is 17641 (0.2%; up to 0.5% in fio 3.26 and later).
    fio 2.17-2.19 and 3.0-3.25 printed some figures of 10,000 and more up to 9% off (old_num2str: `19.0k` for
    19961 in fio 3.25, `19.9k` for 19803 in fio 2.17); the quotient is read when it gives the printed figure cut
    or rounded at its last digit, or (in those versions, or a log that does not tell its version) as that old
    num2str prints it. A figure that is neither is kept as printed and said in the second list returned (printed
    and counted differ: a hand-edited or spliced log). The first list: the job directions (job number from 1,
    label) of a whole figure under 1000 that their report (an excerpt: no `issued` line) cannot tell so."""
    untold: list[tuple[int, str]] = []
    differ: list[str] = []
    kinds = buggy_kinds(version)
    for number, (name, _group, figures) in enumerate(jobs, 1):
        for direction in ("read", "write", "trim", "mixed"):  # mixed (unified_rw_reporting): all its I/Os
            printed = figures.get(f"{direction}_iops")
            step = steps.get((number, direction))
            if printed is None or step is None:
                continue
            total = counts.get((number, direction))
            if direction == "mixed" and (number, "read") in counts:
                total = sum(counts.get((number, d), 0) for d in ("read", "write", "trim"))
            ms = runtimes.get((number, direction))
            if total is not None and ms:
                whole = total * 1000 // ms  # fio's whole quotient
                cut = whole / step  # in units of the printed last digit
                if round(printed / step) in (math.floor(cut), math.floor(cut + 0.5)) or any(
                        math.isclose(old_num2str(whole, kind), printed, rel_tol=1e-9) for kind in kinds):
                    figures[f"{direction}_iops"] = total * 1000 / ms
                else:
                    differ.append(f"{name} {direction} printed {printed:g}, its issued I/Os over its runtime "
                                  f"{total * 1000 / ms:.6g}")
            elif printed < 1000 and printed.is_integer():
                untold.append((number, f"{name} {direction} {printed:g}"))
    return untold, differ


def exact_bw(printed: dict[tuple[int, str], tuple[float, float, int, int]], runtimes: dict[tuple[int, str], int],
             counts: dict[tuple[int, str], int], sizes: dict[str, int], version: str | None,
             jobs: list[tuple[str, str, dict[str, float]]]) -> list[str]:
    """Each `BW=` figure of fio 2.17-2.19 and 3.0-3.25 (printed by the same old num2str, up to 9% off: `20.0MiB/s`
    for 20.96 MiB/s) read as its I/Os x the block size over its runtime, KiB/s (fio: 1000 x io_bytes / runtime),
    where the run's one fixed block size for that direction is known (`sizes`: not bsrange, bssplit) and the
    version's old num2str prints that rate as the figure. `printed`: (job number, direction) -> (its figure in
    KiB/s, the unit of its last digit in KiB/s, 1000 or 1024, 8 for bits else 1). A figure neither that nor the
    rate rounded at its last digit is kept and said in the list returned; other versions (or none told) as printed."""
    differ: list[str] = []
    kinds = buggy_kinds(version) if version else ()  # a log that does not tell its version: as printed
    for (number, direction), (figure, unit, thousand, bits) in printed.items() if kinds else ():
        name, _group, figures = jobs[number - 1]
        parts = ("read", "write", "trim") if direction == "mixed" else (direction,)
        size = {sizes.get(d) for d in parts}
        ms = runtimes.get((number, direction))
        if len(size) != 1 or None in size or not ms or any((number, d) not in counts for d in parts):
            continue
        block = size.pop()
        io_bytes = sum(counts[(number, d)] for d in parts) * block
        rate = io_bytes * 1000 // ms * bits  # fio's whole bytes (bits) a second
        if any(math.isclose(old_num2str(rate, kind, thousand) / (1024 * bits), figure, rel_tol=1e-9)
               for kind in kinds):
            figures[f"{direction}_bw"] = io_bytes * 1000 / ms / 1024
        elif abs(rate / (1024 * bits) - figure) > unit * 0.5001:
            differ.append(f"{name} {direction} printed {figure:g} KiB/s, its issued I/Os x {block} B over its "
                          f"runtime {io_bytes * 1000 / ms / 1024:.6g}")
    return differ
