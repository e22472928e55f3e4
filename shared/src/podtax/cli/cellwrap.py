"""Table cells broken into lines only where a reader breaks them: at a space, or after '_' or '/'; never
inside a word or a number, never between '≥' and its value, never before a '·' (it ends the line before
it). rich folds a column narrower than its longest word mid-word ('kubernete' / 's'), so a narrow table
sizes its columns with these functions and hands rich cells that already fit. Pure."""

from __future__ import annotations

import re

from rich.cells import cell_len

_PARTS = re.compile(r"[^_/]+[_/]*|[_/]+")


def _tokens(line: str) -> list[tuple[str, str]]:
    """(glue, piece) of one line: glue ' ' before a piece that followed a space, '' after '_' or '/'."""
    words: list[str] = []
    for word in line.split():
        if words and (words[-1] == "≥" or word == "·"):  # '≥ value' whole; '·' stays on its left
            words[-1] += " " + word
        else:
            words.append(word)
    return [(" " if k == 0 and i else "", part) for i, word in enumerate(words)
            for k, part in enumerate(_PARTS.findall(word))]


def wrap(text: str, width: int) -> str:
    """``text`` in lines of at most ``width`` cells, broken only where allowed (a piece longer than ``width``
    keeps its own line, whole)."""
    out = []
    for line in text.split("\n"):
        lines = [""]
        for glue, piece in _tokens(line):
            if lines[-1] and cell_len(lines[-1] + glue + piece) > width:
                lines.append(piece)
            else:
                lines[-1] += glue + piece if lines[-1] else piece
        out += lines
    return "\n".join(out)


def longest(text: str) -> int:
    """The narrowest width ``text`` can be wrapped to: its longest unbreakable piece."""
    return max((cell_len(piece) for line in text.split("\n") for _, piece in _tokens(line)), default=0)


def widest(text: str) -> int:
    """The width ``text`` takes unwrapped: its longest line."""
    return max(cell_len(line) for line in text.split("\n"))


def fit_widths(texts: list[list[str]], room: int) -> list[int]:
    """Widths of columns (``texts``: each column's header and cells) summing to at most ``room`` where they can:
    each at least its longest piece, the rest given a cell at a time to the column furthest from unwrapped.
    When even the longest pieces do not fit, their widths (wider than ``room``)."""
    widths = [max(map(longest, column)) for column in texts]
    full = [max(map(widest, column)) for column in texts]
    for _ in range(room - sum(widths)):
        need, i = max((f - w, i) for i, (w, f) in enumerate(zip(widths, full, strict=True)))
        if need <= 0:
            break
        widths[i] += 1
    return widths
