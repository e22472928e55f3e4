"""The realistic ways a captured log breaks, as variants of an intact log (seeded, deterministic).

Each generator yields `(label, damaged text)`; the label says where the damage is, so a failing
case can be reproduced by hand. Used by test_damaged_logs.py.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

Variant = tuple[str, str]
WARNINGS = ("WARNING: the --num-threads option is deprecated and will be removed; use --threads instead",
            "warning: could not set CPU affinity: Invalid argument",
            "stress-ng: warn:  [99] system has only 1 online CPU")
ANSI = ("\x1b[0m", "\x1b[1;32m", "\x1b[2;35m")


def line_starts(text: str) -> list[int]:
    """Offsets at which a line starts (after each newline), the text's end excluded."""
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        if at + 1 < len(text):
            starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def truncations(text: str, rng: random.Random, mid_line: int) -> Iterator[Variant]:
    """Cut at every line boundary (with and without its newline), inside every number at a few
    places (`1770.62` -> `177`, `1770.`), and at `mid_line` random offsets."""
    if len(text) < 2:
        return
    cuts: set[int] = set()
    at = text.find("\n")
    while at >= 0:
        cuts.update((at, at + 1))
        at = text.find("\n", at + 1)
    digits = [i for i in range(1, len(text)) if text[i - 1].isdigit() and (text[i].isdigit() or text[i] == ".")]
    cuts.update(rng.sample(digits, min(len(digits), 400)))
    cuts.update(rng.randrange(1, len(text)) for _ in range(mid_line))
    for cut in sorted(cuts):
        if 0 < cut < len(text):
            yield f"truncated at byte {cut}", text[:cut]


def line_edits(text: str, limit: int, rng: random.Random) -> Iterator[Variant]:
    """A line dropped, duplicated, or swapped with the next one (every line, or `limit` sampled ones)."""
    lines = text.split("\n")
    picks = range(len(lines)) if len(lines) <= limit else sorted(rng.sample(range(len(lines)), limit))
    for i in picks:
        yield f"line {i + 1} dropped", "\n".join(lines[:i] + lines[i + 1:])
        yield f"line {i + 1} duplicated", "\n".join(lines[:i + 1] + lines[i:])
        if i + 1 < len(lines):
            swapped = lines[:i] + [lines[i + 1], lines[i]] + lines[i + 2:]
            yield f"lines {i + 1} and {i + 2} swapped", "\n".join(swapped)


def encodings(text: str, rng: random.Random, places: int) -> Iterator[Variant]:
    """CRLF endings, a BOM, trailing NULs, ANSI colour codes and stderr warnings at random line starts."""
    yield "CRLF line endings", text.replace("\n", "\r\n")
    yield "UTF-8 BOM", "\ufeff" + text
    yield "trailing NULs", text + "\0" * 8
    yield "BOM, CRLF and trailing NULs", "\ufeff" + text.replace("\n", "\r\n") + "\0\0"
    starts = line_starts(text)
    lines = text.split("\n")
    for _ in range(places):
        at = rng.choice(starts)
        code = rng.choice(ANSI)
        yield f"ANSI code at byte {at}", text[:at] + code + text[at:]
        i = rng.randrange(len(lines) + 1)
        warning = rng.choice(WARNINGS)
        yield f"warning line before line {i + 1}", "\n".join(lines[:i] + [warning] + lines[i:])
    end = text.rstrip("\n")
    yield "coloured lines", "\n".join(f"\x1b[1m{line}\x1b[0m" if line else line for line in end.split("\n")) + "\n"


def concatenations(text: str, others: list[str]) -> Iterator[Variant]:
    """Two runs in one capture: the log twice, and the log followed and preceded by another log."""
    joint = "" if text.endswith("\n") else "\n"
    yield "log twice", text + joint + text
    for n, other in enumerate(others):
        yield f"log + other log #{n}", text + joint + other
        yield f"other log #{n} + log", other + ("" if other.endswith("\n") else "\n") + text


def splits(text: str, rng: random.Random, count: int) -> Iterator[tuple[str, str, str]]:
    """(label, stdout, stderr): the log split at a line boundary, kept in order and swapped."""
    starts = line_starts(text)
    for at in sorted(set(rng.sample(starts, min(count, len(starts))))):
        yield f"stdout up to byte {at}", text[:at], text[at:]
        yield f"stderr first, split at byte {at}", text[at:], text[:at]
