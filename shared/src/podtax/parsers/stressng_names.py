"""Names, units and directions of stress-ng's miscellaneous metrics (pure, cached per description)."""

from __future__ import annotations

import re
from functools import cache, lru_cache

from podtax.parsers.stressng_descriptions import DESCRIPTIONS, TEMPLATES

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
    """A misc metric's description as a metrics table prints it -> (name suffix, unit, higher is better), from its
    words as printed: the names and units results are stored under. Its `--yaml` key gives the same metric
    (yaml_misc_metric: the key is read back to stress-ng's wording). Cached: the descriptions, instance counts
    included, repeat from log to log of a campaign."""
    desc = misc_desc(printed)
    return (slug(desc), *misc_unit(desc))


@lru_cache(maxsize=4096)
def yaml_misc_metric(key: str) -> tuple[str, str, bool]:
    """A misc metric's `--yaml` key (`mbsec-read-rate`) -> (name suffix, unit, higher is better)."""
    desc = described(key)
    return (slug(desc), *misc_unit(desc))


def yaml_key(desc: str, percent: str = "") -> str:
    """stress-ng's YAML key for a description (its stress_description_yamlify, 0.13 to 0.22): letters in lower
    case, digits, a space as `-`, any other character dropped (a `%` written as `percent` from 0.21.04 on: pass
    `percent="percent"`), at most 39 characters."""
    return "".join(c.lower() if c.isascii() and c.isalnum() else "-" if c == " " else percent if c == "%" else ""
                   for c in desc)[:_KEY_MAX]


def described(key: str) -> str:
    """The description a YAML key stands for: stress-ng's own wording when its sources give one that the key
    loses (`mbsec-read-rate` -> `MB/sec read rate`; a cut key, or one of a template: `nanosecs per context
    switch (%s method)`), else the key's words (a leading `-` was a `%`: `% compression ratio`)."""
    cut = len(key) == _KEY_MAX
    key = key.rstrip("-")  # `Mfp-ops per sec, %-20s` pads its method with spaces
    known = _KNOWN.get(key) or _KNOWN_PERCENT.get(key)
    if known is not None:
        return known
    if key.startswith("percent-"):  # 0.21.04 on (stress-ng 3924570e0): `% of time creating files`, read as before
        key = key[len("percent"):]
    filled = _from_template(key, cut) if len(key) <= _KEY_MAX else None  # stress-ng writes none longer: a forged
    if filled is not None:  # key of 20,000 characters took 19 s in the templates' patterns
        return filled
    words = key.replace("-", " ")
    return "%" + words if key.startswith("-") else words


_KEY_MAX = 39
_CONVERSION = re.compile(r"%[-+#0-9.]*(?:ll|l|z|j|h)?[sdiufgezx]")
_KNOWN = {yaml_key(d).rstrip("-"): d for d in reversed(DESCRIPTIONS)}  # the first of two alike wins
_KNOWN_PERCENT = {yaml_key(d, "percent").rstrip("-"): d for d in reversed(DESCRIPTIONS) if "%" in d}  # 0.21.04 on
_PIECES = tuple(_CONVERSION.split(t.replace("%%", "%")) for t in TEMPLATES)  # the fixed words around each `%s`
_TEMPLATES = tuple(([yaml_key(piece) for piece in pieces], pieces) for pieces in _PIECES)


def _from_template(key: str, cut: bool) -> str | None:
    """`key` as one of stress-ng's formatted descriptions (TEMPLATES), its words in place of the `%s`; a `cut` key
    (39 characters) may end inside the template's last words (`...-futex-metho`). The template whose fixed words
    match most of the key wins (at least 10 characters of them when the key is cut)."""
    best: tuple[int, str] | None = None
    for keyed, pieces in _TEMPLATES:
        # A template's patterns start with its first words whole and, for a key not cut, end with its last words
        # whole (one without `%s` is its words, perhaps cut): a key that does not start and end so matches none of
        # them. Two str tests, not a pattern per cut and template (~45 µs a new key, a forged report's thousands)
        if not (keyed[0].startswith(key) if len(keyed) == 1
                else key.startswith(keyed[0]) and (cut or key.endswith(keyed[-1]))):
            continue
        for held in _cuts(keyed[-1], cut):
            if not key.endswith(keyed[-1][:held]):  # its pattern ends so: no match (review r5: a cut key tried
                continue  # ~440 patterns, 29 of the 43 templates starting with a `%s`)
            match = _pattern(tuple(keyed), held).fullmatch(key)
            fixed = sum(map(len, keyed[:-1])) + held
            if match and (held == len(keyed[-1]) or fixed >= 10) and (best is None or fixed > best[0]):
                words = [g.replace("-", " ") for g in match.groups()]
                best = (fixed, "".join(p + w for p, w in zip(pieces, [*words, ""])))
            if match:
                break
    return best[1] if best else None


@cache
def _pattern(keyed: tuple[str, ...], held: int) -> re.Pattern[str]:
    """A template's keyed words with a group for each `%s`, its last words cut to `held` characters (compiled once:
    the templates and their cuts are more than re's own cache holds)."""
    return re.compile("".join(re.escape(k) + "([a-z0-9-]*?)" for k in keyed[:-1]) + re.escape(keyed[-1][:held]))


def _cuts(last: str, may_be_cut: bool) -> range:
    """How much of a template's last fixed words a key holds: all, or when the key may be cut, fewer."""
    return range(len(last), 0 if may_be_cut and last else len(last) - 1, -1)


_SECOND = ("sec", "second", "s")
_PER = ("per", "pec")  # `pec`: llc-affinity's `MB pec sec memory write rate` (0.15.00 to 0.15.09)


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
        if bare in _PER and i + 1 < len(words) and words[i + 1].strip("(),;") in _SECOND:
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
        return " ".join(words[:-2] if words[-2] == "/" else words[:-1]) + "/s"  # `random bits / sec`
    return None
