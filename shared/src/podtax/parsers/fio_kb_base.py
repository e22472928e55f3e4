"""fio 2 before 2.16 printed a rate as `bw=81842KB/s` whatever its kb_base: `KB` is 1024 bytes by default and 1000
bytes with `kb_base=1000` (num2str's divisor is `thousand[is_power_of_2(kb_base)]`, its postfix `K` either way; 2.16
printed `KiB` and `kB` apart). The text does not echo kb_base, so podtax read every such `KB/s` as KiB/s: with
kb_base=1000 a rate 2.4% high (`MB/s` 4.9%). The run tells it, though: fio divides bytes and I/Os by the same runtime,
so a job of one block size (its header's `bs=4K-4K`, always in powers of 1024: fio_uint_to_kmg) moves IOPS x bs
bytes a second. A rate 1.024 (per power: K, M, G) times that is in powers of 1000, and is read so.
"""

from __future__ import annotations

import re

# fio 2's header: `kb: (g=0): rw=randread, bs=4K-4K/4K-4K/4K-4K, ioengine=...`: read, write and trim min-max
_HEAD = re.compile(r"^(\S.*?): \(g=\d+\): rw=\w+, bs=(\d+[KMGPE]?)-(\d+[KMGPE]?)/(\d+[KMGPE]?)-(\d+[KMGPE]?)/"
                   r"(\d+[KMGPE]?)-(\d+[KMGPE]?), ", re.M)
_DIRECTIONS = ("read", "write", "trim")
MIN_IOPS = 500  # fio prints IOPS as a whole number: below this its truncation alone may reach a fifth of 2.4%
CLOSE = 0.006  # a rate this near IOPS x bs x 1.024^power (relative) is in powers of 1000; the default's is near 1


def _bytes(size: str) -> int:
    return int(size.rstrip("KMGPE")) * 1024 ** max("_KMGPE".find(size[-1]), 0)


def _block_sizes(text: str) -> dict[str, list[int | None]]:
    """Each job's block size per direction (read, write, trim) from its fio 2 header; None where it is a range."""
    sizes: dict[str, list[int | None]] = {}
    for m in _HEAD.finditer(text):
        pairs = [(m.group(i), m.group(i + 1)) for i in (2, 4, 6)]
        sizes.setdefault(m.group(1), [_bytes(low) if low == high else None for low, high in pairs])
    return sizes


def read_decimal_rates(text: str, jobs: list[tuple[str, str, dict[str, float]]],
                       printed: dict[tuple[int, str], int]) -> None:
    """Read again in powers of 1000 the fio 2 rates (`printed`: (job number from 1, direction) -> the power of
    its `KB/s`, `MB/s`... unit, no `i`) that IOPS x bs shows were printed so (kb_base=1000)."""
    sizes = _block_sizes(text) if printed else {}
    for (number, direction), power in printed.items():
        name, _group, figures = jobs[number - 1]
        bs = sizes.get(name, [None] * 3)[_DIRECTIONS.index(direction)] if direction in _DIRECTIONS else None
        iops, kib = figures.get(f"{direction}_iops", 0.0), figures.get(f"{direction}_bw")
        if bs is None or kib is None or iops < MIN_IOPS or power < 1:
            continue
        ratio = kib * 1024 / (iops * bs)
        if abs(ratio / 1.024 ** power - 1) < CLOSE < abs(ratio - 1):
            figures[f"{direction}_bw"] = kib / 1.024 ** power
