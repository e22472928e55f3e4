"""fio's text report, its IOPS figures: fio prints each cut from its I/Os over its runtime, so where the report
gives both (`issued` and the runtime) the figure is read exactly as the JSON gives it (see podtax.parsers.fio_text)."""

from __future__ import annotations

import math

COUNT_SCALE = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}  # a figure's suffix (`17.6k` IOPS, `1506.6K` µs)


def step(number: str, suffix: str) -> float:
    """The unit of a printed IOPS figure's last digit: 1 for `7505`, 100 for `17.6k`."""
    point = number.find(".")
    return COUNT_SCALE[suffix] / 10 ** (len(number) - point - 1 if point >= 0 else 0)


def exact_iops(jobs: list[tuple[str, str, dict[str, float]]], runtimes: dict[tuple[int, str], int],
                counts: dict[tuple[int, str], int], steps: dict[tuple[int, str], float]) -> list[str]:
    """Each direction's IOPS as fio's JSON gives it, its I/Os x 1000 / its runtime in ms, where fio printed that
    quotient cut to a whole number (`iops = 1000 * total_io_u / runt` in integers) and then, from 10,000 (fio 3:
    from 1000 where it prints `12.0k`), to 3 significant digits: a job of few IOPS reads far low so (`IOPS=4` for
    10 I/Os in 2001 ms, 4.9975 in the JSON of the same run: 20%), and `IOPS=17.6k` is 17641 (0.2%; up to 0.6%).
    A figure that is not that quotient (cut, or rounded at its last digit) is kept as printed. Returns the job
    directions of a whole figure under 1000 that their report (an excerpt: no `issued` line) cannot tell so."""
    untold = []
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
                cut = total * 1000 // ms / step  # fio's whole quotient in units of the printed last digit
                if round(printed / step) in (math.floor(cut), math.floor(cut + 0.5)):
                    figures[f"{direction}_iops"] = total * 1000 / ms
            elif printed < 1000 and printed.is_integer():
                untold.append(f"{name} {direction} {printed:g}")
    return untold
