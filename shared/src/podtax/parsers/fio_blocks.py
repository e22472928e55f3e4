"""The block size a fio job ran with, as echoed to compare with the requested bs.

fio keeps a block size per direction (read, write, trim: `bs=4k,64k`, `bssplit=,4k/50:64k/50`; a direction
left empty takes bs, one left out the last given). A job's echo is that of the directions its rw uses (read for
read/randread, write for write/randwrite, both for rw/randrw/readwrite, write and trim for trimwrite): one size
when they all use one, else a range (`4096B-64.0KiB`) or the split as given, so a template asking bs=4k does not
take a mixed-size run for its own. `bssplit` wins over bs (fio uses the split); a single-size split (`4k/100`,
`bsrange=4k-4k`) is that size.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from podtax.parsers.base import Echoed, parse_int, size_bytes

_USES = {"read": (0,), "randread": (0,), "write": (1,), "randwrite": (1,), "rw": (0, 1), "randrw": (0, 1),
         "readwrite": (0, 1), "trim": (2,), "randtrim": (2,), "trimwrite": (1, 2), "randtrimwrite": (1, 2)}
# A job's header line: `x: (g=0): rw=randwrite, bs=(R) 4096B-4096B, (W) 4096B-64.0KiB, (T) 4096B-64.0KiB,
# ioengine=psync, iodepth=1` (fio 3) or `bs=4K-4K/512-64K/4K-4K` (fio 2). Its bs field is read up to the first
# `, ioengine=` (one lazy run before a literal: linear), then split by str methods, never by nested quantifiers. A name
# holds `:` too (`rr:4k`): it ends at the first `: (g=N): rw=..., bs=`, kept (atomic) so that a line of many such heads
# is not tried from each of them, its bs scanned to the line's end each time (quadratic: 49 s for 400 KB)
_HEAD = re.compile(r"^(?>\S.*?: \(g=\d+\): rw=(\w+), bs=)([^\n]*?), ioengine=(\w+), iodepth=(\d+)")
_MARKED = re.compile(r"\(([RWT])\) ([^\s,]+)")  # fio 3: `(W) 4096B-64.0KiB`


def _uses(rw: str) -> tuple[int, ...]:
    """The directions (0 read, 1 write, 2 trim) a job of `rw` issues; all three for an rw podtax does not know."""
    return _USES.get(rw.split(":", 1)[0].strip().lower(), (0, 1, 2))


def _size(text: str) -> float | str:
    size = size_bytes(text)
    return text if size is None else size


def _echo(ranges: list[tuple[str, str]]) -> str | None:
    """One size when every bound is the same size, a direction's `low-high` when only one, else the ranges
    joined as fio's bs joins directions (`4096B,4096B-64.0KiB`)."""
    if not ranges:
        return None
    if len({_size(bound) for pair in ranges for bound in pair}) == 1:
        return ranges[0][0]
    forms = [low if _size(low) == _size(high) else f"{low}-{high}" for low, high in ranges]
    return ",".join(dict.fromkeys(forms))


def head(line: str) -> Echoed | None:
    """rw, bs (of the directions rw uses), ioengine and iodepth of a text header line; None for another line.
    A line of up to _KEPT characters is read once and its echo kept (a new copy each time): a campaign's logs repeat
    the same few job lines, each ~10 µs to read (a lazy regex run, then each bound's size)."""
    if len(line) > _KEPT:  # longer than any real job line: read, not kept
        return _read_head(line)
    echoed = _kept_head(line)
    return None if echoed is None else dict(echoed)


_KEPT = 400


def _read_head(line: str) -> Echoed | None:
    m = _HEAD.match(line)
    if m is None:
        return None
    field = m.group(2)
    marked = {"RWT".index(d): bounds for d, bounds in _MARKED.findall(field)}
    if not marked:  # fio 2: `4K-4K/4K-4K/4K-4K`, read/write/trim
        marked = dict(enumerate(field.split(",", 1)[0].split()[0].split("/"))) if field.strip() else {}
    ranges = [(low, high or low) for low, _, high in (marked[d].partition("-") for d in _uses(m.group(1))
                                                       if d in marked)]
    depth = parse_int(m.group(4))
    echoed: Echoed = {"rw": m.group(1)}
    bs = _echo(ranges)
    if bs is not None:
        echoed["bs"] = bs
    echoed.update(ioengine=m.group(3), iodepth=m.group(4) if depth is None else depth)
    return echoed


_kept_head = lru_cache(maxsize=1024)(_read_head)


def _parts(value: str) -> list[str]:
    """A per-direction option's three parts (`,4k/50:64k/50` -> ['', '4k/50:64k/50', '4k/50:64k/50'])."""
    parts = value.split(",")[:3]
    return parts + [parts[-1]] * (3 - len(parts))


def job_bs(options: Mapping[str, Any]) -> str | None:
    """The bs a JSON job's options echo when they hold a bssplit or a bsrange (None: bs stands as given). The
    split (or range) as given when its directions mix sizes, else its one size; a direction it leaves empty
    uses bs (fio's default 4k without one)."""
    rw = options.get("rw")
    uses = _uses(rw if isinstance(rw, str) else "")
    bs = options.get("bs")
    default = _parts(bs if isinstance(bs, str) and bs.strip() else "4k")
    for key, sep in (("bssplit", ":"), ("bsrange", "-")):
        value = options.get(key)
        if not isinstance(value, str) or not value.strip():
            continue
        parts = _parts(value)
        sizes: list[str] = []
        for d in uses:
            if parts[d].strip():
                sizes += [entry.split("/", 1)[0].strip() for entry in parts[d].split(sep) if entry.strip()]
            else:
                sizes.append(default[d].partition("-")[0].strip() or "4k")
        return sizes[0] if len({_size(size) for size in sizes}) == 1 else value
    return None


def fixed_sizes(line: str) -> dict[str, int]:
    """The block size in bytes of each direction a header line gives one size for (`(R) 4096B-4096B`; fio 2:
    `4K-4K/4K-4K/4K-4K` or `4096B-4096B,4096B-4096B,...`, read/write/trim); a range (bsrange, bssplit) none, nor a
    size fio may have rounded (`977KiB` for bs=1000000: only one in bytes or a power of 2 is taken)."""
    m = _HEAD.match(line)
    if m is None:
        return {}
    field = m.group(2)
    marked = {"RWT".index(d): bounds for d, bounds in _MARKED.findall(field)}
    if not marked and field.strip():
        first = field.split()[0]
        marked = dict(enumerate(first.split("/" if "/" in first else ",")))
    sizes = {}
    for d, bounds in marked.items():
        low, _, high = bounds.partition("-")
        size = size_bytes(low)
        in_bytes = low[:-1].isdigit() and low[-1] == "B"
        whole = size is not None and size.is_integer() and (in_bytes or not int(size) & int(size) - 1)
        if d < 3 and whole and size == size_bytes(high or low):
            sizes[("read", "write", "trim")[d]] = int(size)
    return sizes
