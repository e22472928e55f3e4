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
    `nanoseconds per call (average per stressor)` -> `nanoseconds per call`."""
    text = text.rstrip()
    if text.endswith(")"):
        at = text.rfind(" (")
        if at >= 0 and ("mean of" in text[at:] or "average per" in text[at:]):
            return text[:at].rstrip()
    return text


@lru_cache(maxsize=4096)
def misc_metric(printed: str) -> tuple[str, str, bool]:
    """A misc metric's description as printed -> (name suffix, unit, higher is better). One cached
    call per line instead of three (misc_desc, slug, misc_unit): the descriptions, instance
    counts included, repeat from log to log of a campaign."""
    desc = misc_desc(printed)
    return (slug(desc), *misc_unit(desc))


def misc_unit(desc: str) -> tuple[str, bool]:
    """A rate (`cache ops per second`, `Mfp-ops per sec, float64 add`) is per second and higher is better."""
    words = desc.split()
    if "per" in words and words.index("per") + 1 < len(words) \
            and words[words.index("per") + 1].rstrip(",;") in ("sec", "second"):
        return " ".join(words[:words.index("per")]) + "/s", True
    return desc, False
