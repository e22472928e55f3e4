"""The narrowest layout of a CLI table: one block of lines per row ("card"), for a console too narrow for even
the stacked table (`podtax report` or `podtax compare` at 40 columns). rich gave such a table's columns less than
their figures needed and cut them ("[0.952, 0.9", "129.5 (n=7") or dropped whole columns, the cell's name and
verdict among them. A card keeps the row's identity on its first line and each fact on its own line below it,
wrapped only at spaces (whole_escapes.whole), so every figure and its unit stays whole at any width."""

from __future__ import annotations

from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from podtax.cli.whole_escapes import whole

INDENT = 2  # a fact's first line
HANG = 4  # its continuation lines


def card(title: Text | str, facts: list[Text | str], width: int) -> Group:
    """A row as lines: ``title`` (wrapped to ``width``), then each non-empty fact indented, its continuation lines
    indented further. Lines are never longer than ``width`` unless a single word is (a name: folded between whole
    escapes by ``whole``)."""
    lines: list[Text] = []
    head = title if isinstance(title, Text) else Text(title)
    lines += whole(head, max(width, 1)).split("\n")
    for fact in facts:
        text = fact if isinstance(fact, Text) else Text(fact)
        if not text.plain.strip():
            continue
        for i, line in enumerate(whole(text, max(width - HANG, 1)).split("\n")):
            lines.append(Text.assemble(" " * (INDENT if i == 0 else HANG), line))
    for line in lines:
        line.no_wrap = True  # wrapped here already: rich must not wrap it again
        line.end = "\n"
    return Group(*lines)


def fits(console: Console, table: Table) -> bool:
    """Whether ``table`` fits ``console`` without cutting a no_wrap column: rich measures such a column at its
    longest word, so a stacked table "fitted" 40 columns and was then drawn with its figures cut and columns
    dropped. Each no_wrap column is first given its widest cell as its minimum width."""
    unbounded = console.options.update_width(100_000)
    for column in table.columns:
        if column.no_wrap:
            column.min_width = max(Measurement.get(console, unbounded, cell).maximum
                                   for cell in (column.header, *column.cells))
    return console.measure(table, options=unbounded).minimum <= console.width
