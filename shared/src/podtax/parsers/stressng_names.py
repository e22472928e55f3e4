"""Names, units and directions of stress-ng's miscellaneous metrics (pure, cached per description)."""

from __future__ import annotations

import re
from functools import lru_cache

_SLUG = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=4096)
def slug(text: str) -> str:
    """Cached: stressor names and metric descriptions repeat from log to log."""
    return _SLUG.sub("_", text.lower()).strip("_")


def misc_desc(text: str) -> str:
    """`qsort comparisons per sec (geometric mean of 12 instances)` -> `qsort comparisons per sec`;
    `nanoseconds per call (average per stressor)` -> `nanoseconds per call`; `packets received (total of 2
    instances)` -> `packets received` (so the instance count stays out of the name); 0.15's
    `memory read rate (MB per sec) (geometic mean)` -> `memory read rate (MB per sec)`."""
    text = text.rstrip()
    if text.endswith(")"):
        at = text.rfind(" (")
        tail = text[at:]
        if at >= 0 and ("mean of" in tail or "average per" in tail or tail.endswith(" mean)")
                        or (" of " in tail and "instance" in tail)):  # `(total of 2 instances)`, `(maximum of ...)`
            return text[:at].rstrip()
    return text


@lru_cache(maxsize=4096)
def misc_metric(printed: str) -> tuple[str, str, bool]:
    """A misc metric's description as printed -> (name suffix, unit, higher is better). One cached
    call per line instead of three (misc_desc, slug, misc_unit): the descriptions, instance
    counts included, repeat from log to log of a campaign."""
    desc = misc_desc(printed)
    return (slug(desc), *misc_unit(desc))


_SECOND = ("sec", "second", "s")


def misc_unit(desc: str) -> tuple[str, bool]:
    """The unit of a misc metric and whether higher is better, from stress-ng's descriptions:

    - a cost is lower-is-better: a time (`nanosecs per call`, `ms mmap avg. duration`, `seconds to
      open all file descriptors`), a latency or overhead, a failure or miss (`NUMA misses per sec`,
      `mmaps failed`), a cost per item or per bogo op, a compression ratio, a queue length;
    - a rate is higher-is-better: `cache ops per second` (`cache ops/s`), `Mfp-ops per sec, float64 add`
      (`Mfp-ops/s`), `memory rate (MB per sec)` (`MB/s`), `write128 MB/sec` (`MB/s`), `socketpair calls
      sec` (`socketpair calls/s`: a per left out);
    - work done in the run or its success is higher-is-better: `primes found`, `packets received`,
      `mmaps total`, `MB compressed`, `% sendto calls succeeded`, `% of 128 pthreads created`, `MHz`;
    - anything else is lower-is-better, its description as the unit."""
    words = desc.split()
    bare = [word.strip("(),;").lower() for word in words]
    if _COSTS.intersection(bare) or any(phrase in desc for phrase in _COST_PHRASES):
        return desc, False
    rate = _rate(words)
    if rate is not None:
        return rate, True
    return desc, bool(_WORK.intersection(bare))


_TIMES = ("nanosec", "nanosecs", "nanoseconds", "ns", "microsec", "microsecs", "microseconds", "usec", "usecs",
          "us", "millisec", "millisecs", "milliseconds", "ms", "msec", "msecs", "seconds", "secs")
_COSTS = frozenset((*_TIMES, "latency", "duration", "overhead", "overrun", "underrun", "miss", "misses",
                    "retries", "failed", "failures", "errors", "interruptions", "ratio"))
_COST_PHRASES = ("per item", "per bogo op", "queue length")
_WORK = frozenset(("total", "found", "received", "sent", "read", "compressed", "succeed", "succeeded",
                   "successful", "successfully", "created", "chased", "exercised", "largest", "mhz", "ghz"))


def _rate(words: list[str]) -> str | None:
    """The unit of a per-second rate (`add matrix ops/s`, `MB/s`), or None."""
    for i, word in enumerate(words):
        bare = word.strip("(),;")
        if bare == "per" and i + 1 < len(words) and words[i + 1].strip("(),;") in _SECOND:
            before = words[:i]
            opened = [j for j, w in enumerate(before) if w.startswith("(")]
            if opened and ")" in " ".join(before[opened[-1]:]):  # `packets (32 bytes) received per sec`
                opened = []
            counted = before[opened[-1]:] if opened else before  # `memory rate (MB per sec)`: what the ( holds
            return " ".join(counted).lstrip("(") + "/s"
        head, slash, tail = bare.rpartition("/")
        if slash and head and tail in _SECOND:
            return f"{head}/s"
    if len(words) >= 2 and words[-1] in ("sec", "second"):
        return " ".join(words[:-1]) + "/s"
    return None
