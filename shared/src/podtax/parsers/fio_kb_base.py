"""fio 2 up to 2.16 printed a rate as `bw=81842KB/s` whatever its kb_base: `KB` is 1024 bytes by default and 1000
bytes with `kb_base=1000` (num2str's divisor is `thousand[is_power_of_2(kb_base)]`, its postfix `K` either way; 2.17
printed `KiB` and `kB` apart). The text does not echo kb_base, so podtax read every such `KB/s` as KiB/s: with
kb_base=1000 a rate 2.4% high (`MB/s` 4.9%). The run tells it, though: fio divides bytes and I/Os by the same runtime,
so a job of one block size (its header's `bs=4K-4K`, always in powers of 1024: fio_uint_to_kmg) moves IOPS x bs
bytes a second, and a rate 1.024 (per power: K, M, G) times that is in powers of 1000.

fio 2 prints every rate of a group (each job's and the group's `aggrb`) in one base, the group's (stat.c:
`rs->kb_base`), so the decision is per group (`g=N`): a job report tells only when its block size is certain (its
name on one header of the group, or, for a `jobs=2` group_reporting report, every header of the group of one block
size for that direction); a group whose reports tell powers of 1000 has all its rates read so, one whose reports
disagree is refused (fio cannot print that), one that tells nothing is left as printed (KiB: up to 2.4% high per
power if it was kb_base=1000; fio_text flags it). A job whose `io=` is printed in plain bytes (`io=606208B`, under
10^6 bytes) tells too, whatever its IOPS: fio's rate is those bytes over its `runt=` ms (stat.c: `1000 * io_bytes /
runt`), so a rate 1.024^power times that is in powers of 1000 (fio 2.16, unit_base=1, kb_base=1000, 73 IOPS:
`io=606208B, bw=2415.2Kbit/s, runt=2008msec`, 2415.2 x 1000 / 8 = 606208 / 2.008 s).
"""

from __future__ import annotations

import re

from podtax.parsers.base import ParseFailure

# fio 2's header: `kb: (g=0): rw=randread, bs=4K-4K/4K-4K/4K-4K, ioengine=...`: read, write and trim min-max
_HEADER = re.compile(r"^(\S.*?): \(g=(\d+)\): rw=", re.M)
_BS = re.compile(r"rw=\w+, bs=(\d+[KMGPE]?)-(\d+[KMGPE]?)/(\d+[KMGPE]?)-(\d+[KMGPE]?)/(\d+[KMGPE]?)-(\d+[KMGPE]?), ")
_REPORT = re.compile(r"^(\S.*?): \(groupid=(\d+), jobs=(\d+)\): err=", re.M)
_DIRECTIONS = ("read", "write", "trim")
MIN_IOPS = 500  # fio prints IOPS as a whole number: below this its truncation alone may reach a fifth of 2.4%
CLOSE = 0.006  # a rate this near IOPS x bs x 1.024^power (relative) is in powers of 1000; the default's is near 1
Sizes = tuple[int | None, ...]  # a header's block size per direction (read, write, trim); None where it is a range
Jobs = list[tuple[str, str, dict[str, float]]]  # (job name, group id, figures)


def _bytes(size: str) -> int:
    return int(size.rstrip("KMGPE")) * 1024 ** max("_KMGPE".find(size[-1]), 0)


def _headers(text: str) -> dict[str, list[tuple[str, Sizes]]]:
    """Each group's headers (job name, block sizes); a header in another form (`bs(seq/rand)=`) has none."""
    groups: dict[str, list[tuple[str, Sizes]]] = {}
    for m in _HEADER.finditer(text):
        eol = text.find("\n", m.end())
        bs = _BS.match(text, m.end() - 3, eol if eol >= 0 else len(text))
        pairs = [(bs.group(i), bs.group(i + 1)) for i in (1, 3, 5)] if bs else [("", "-")] * 3
        sizes = tuple(_bytes(low) if low == high else None for low, high in pairs)
        groups.setdefault(m.group(2), []).append((m.group(1), sizes))
    return groups


def _block_size(heads: list[tuple[str, Sizes]], name: str, members: int, d: int) -> int | None:
    """The block size of a report's direction `d`: certain only as above, else None."""
    sizes = {s[d] for n, s in heads if members > 1 or n == name}
    named = sum(n == name for n, _ in heads)
    return next(iter(sizes)) if len(sizes) == 1 and (members > 1 or named == 1) else None


def read_decimal_rates(text: str, jobs: Jobs, printed: dict[tuple[int, str], int],
                       exact: dict[tuple[int, str], float] | None = None) -> tuple[set[str], bool]:
    """Read again in powers of 1000 every fio 2 rate (`printed`: (job number from 1, direction) -> the power of its
    `KB/s`, `MB/s`... unit, no `i`) of each group whose IOPS x bs, or `exact` (B/s: a plain-bytes `io=` over its
    `runt=`), shows it printed so (kb_base=1000); return those groups (their `aggrb` is in that base too:
    group_rate), and whether a rate with a prefix was left as printed in a group that told neither base."""
    reports = [(m.group(1), m.group(2), int(m.group(3))) for m in _REPORT.finditer(text)] if printed else []
    if [r[:2] for r in reports] != [j[:2] for j in jobs]:  # not the reports the parser read: leave them as printed
        return set(), any(power >= 1 for power in printed.values())
    heads = _headers(text)
    votes: dict[str, dict[bool, str]] = {}  # group -> {in powers of 1000: the first report telling so}
    for (number, direction), power in printed.items():
        name, group, figures = jobs[number - 1]
        bs = _block_size(heads.get(group, []), name, reports[number - 1][2], _DIRECTIONS.index(direction)) \
            if direction in _DIRECTIONS and group in heads else None
        iops, kib = figures.get(f"{direction}_iops", 0.0), figures.get(f"{direction}_bw")
        rate = (exact or {}).get((number, direction)) or (iops * bs if bs is not None and iops >= MIN_IOPS else 0)
        if not rate or kib is None or power < 1:
            continue
        ratio = kib * 1024 / rate
        for decimal, near in ((True, 1.024 ** power), (False, 1.0)):
            if abs(ratio / near - 1) < CLOSE:
                votes.setdefault(group, {}).setdefault(decimal, f"{name} {direction} (iops={iops:.0f}, bs={bs}, "
                                                                f"bw={kib:.0f} in the printed unit, io/runt "
                                                                f"{(exact or {}).get((number, direction), 0):.0f} B/s)")
    for group, said in votes.items():
        if len(said) > 1:
            raise ParseFailure("unknown-format", f"fio 2 prints every rate of a group in one base (kb_base), but "
                                                 f"group {group}'s reports disagree: {said[True]} is IOPS x bs in "
                                                 f"powers of 1000, {said[False]} in powers of 1024: the log's figures "
                                                 "do not fit one run")
    decimal = {group for group, said in votes.items() if True in said}
    for (number, direction), power in printed.items():
        figures = jobs[number - 1][2]
        if jobs[number - 1][1] in decimal and power >= 1 and f"{direction}_bw" in figures:
            figures[f"{direction}_bw"] /= 1.024 ** power
    undecided = any(power >= 1 and jobs[number - 1][1] not in votes for number, _ in printed)
    return decimal, undecided


def group_rate(kib: float, unit: str, decimal: bool) -> float:
    """A fio 2 group's `aggrb` in KiB/s (`kib`: read with `KB` as 1024 bytes) when its group is in powers of 1000."""
    power = "_KMGT".find(unit[0])  # (fio_groups.unit_power, -1 for `KiB`: not imported, fio_groups imports this)
    return kib / 1.024 ** power if decimal and "i" not in unit.removesuffix("bit") and power >= 1 else kib
