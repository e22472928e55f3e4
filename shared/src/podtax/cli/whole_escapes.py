"""Names from the bus in narrow cells and paragraphs: event_payloads.printable writes their hidden and control
characters as `\\uNNNN` / `\\xNN`, and rich folds a word longer than its column at any character, so a name broke
inside an escape (`node-1\\u202` on one line, `e2-edon` on the next) and the text shown named no character.
``whole`` wraps as rich does (at spaces; a word longer than the width folded), breaking a word only between whole
escapes; an escape wider than the width itself is shown as '…' (as printable_cut: never part of one). ``Whole`` is a
table cell wrapped so at its column's width."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.text import Text

from podtax.event_payloads import ESCAPE

_WORDS = re.compile(r"\S+\s*")
_ATOMS = re.compile(ESCAPE + "|.", re.S)  # an escape printable wrote, or one character


def layout(line: str, width: int) -> tuple[list[int], list[tuple[int, int]]]:
    """Where to break `line` (one line, no newline) into lines of at most `width` cells (offsets in it), and the
    escapes wider than `width` (start, end), each to be shown as '…'."""
    breaks: list[int] = []
    hidden: list[tuple[int, int]] = []
    col = len(line) - len(line.lstrip())
    for m in _WORDS.finditer(line):
        word = m.group().rstrip()
        if col and col + cell_len(word) > width:
            breaks.append(m.start())
            col = 0
        if cell_len(word) <= width:
            col += cell_len(word)
        else:  # folded, between whole escapes
            for a in _ATOMS.finditer(word):
                size = cell_len(a.group())
                if size > width:
                    hidden.append((m.start() + a.start(), m.start() + a.end()))
                    size = 1
                if col and col + size > width:
                    breaks.append(m.start() + a.start())
                    col = 0
                col += size
        col += len(m.group()) - len(word)
    return breaks, hidden


def whole(text: Text, width: int) -> Text:
    """`text` (styles kept) with a newline wherever it must break to fit `width` cells, never inside an escape."""
    breaks: set[int] = set()
    hidden: set[tuple[int, int]] = set()
    start = 0
    for line in text.plain.split("\n"):
        at, wide = layout(line, max(width, 1))
        breaks.update(start + o for o in at)
        hidden.update((start + a, start + b) for a, b in wide)
        start += len(line) + 1
    cuts = sorted(breaks | {o for span in hidden for o in span} - {0, len(text.plain)})
    out = Text(style=text.style, justify=text.justify, overflow=text.overflow, no_wrap=text.no_wrap, end=text.end)
    for begin, piece in zip([0, *cuts], text.divide(cuts), strict=True):
        if begin in breaks:
            out.rstrip()
            out.append("\n")
        if (begin, begin + len(piece)) in hidden:
            piece.plain = "…"  # its styles kept on the one character left
        out.append_text(piece)
    return out


class Whole:
    """A table cell (text or a Text) wrapped by ``whole`` at its column's width; measured as rich measures it."""

    def __init__(self, text: Text | str) -> None:
        self.text = text if isinstance(text, Text) else Text(text)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.text)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        yield whole(self.text, options.max_width)
