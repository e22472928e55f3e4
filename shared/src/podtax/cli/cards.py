"""The narrowest layout of a CLI table: one block of lines per row ("card"), for a console too narrow for even
the stacked table (`podtax report` or `podtax compare` at 40 columns). rich gave such a table's columns less than
their figures needed and cut them ("[0.952, 0.9", "129.5 (n=7") or dropped whole columns, the cell's name and
verdict among them. A card keeps the row's identity on its first line and each fact on its own line below it,
wrapped only at spaces (whole_escapes.whole), so every figure and its unit stays whole at any width."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from podtax.cli import cellwrap
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


def _words(text: str) -> int:
    """The narrowest width ``text`` wraps to at spaces only (a figure with its unit: "events/s" is not broken)."""
    return max((cell_len(word) for word in text.split()), default=0)


def _widths(texts: list[list[str]], room: int, figures: tuple[int, ...] = ()) -> list[int]:
    """Each column at least its longest piece; then, shortest need first, each column made as wide as its widest
    cell while ``room`` lasts: every column but the longest ones on one line (cellwrap.fit_widths spread the room
    evenly, so a flag list broke at its '/' beside a wrapped date with room to spare)."""
    widths = [max(map(_words if i in figures else cellwrap.longest, column)) for i, column in enumerate(texts)]
    full = [max(map(cellwrap.widest, column)) for column in texts]
    left = room - sum(widths)
    for i in sorted(range(len(texts)), key=lambda i: full[i] - widths[i]):
        grow = max(0, min(full[i] - widths[i], left))
        widths[i] += grow
        left -= grow
    return widths


def fitted(console: Console, title: str, columns: list[tuple[str, str]], rows: list[list[str]],
           named_by: int = 1, figures: tuple[int, ...] = ()) -> Table | Group:
    """A table of plain-text ``rows`` (``columns``: header and justify) as wide as ``console``: each column at least
    its longest unbreakable piece (cellwrap: a cell breaks only at a space or after '_' or '/'), the rest of the
    room to the columns furthest from one line; cards when even those pieces do not fit. rich gave each column a
    share of the width and cut what did not fit with '…' ("events_per_s…", "996.…" at 80 columns). A card is named
    by its row's first ``named_by`` cells; the columns numbered in ``figures`` (a value and its unit) break only at
    spaces."""
    room = console.width - (3 * len(columns) + 1)  # the default box: a border and a padding each side per column
    texts = [[header, *(row[i] for row in rows)] for i, (header, _) in enumerate(columns)]
    widths = _widths(texts, room, figures)
    if sum(widths) > room:
        headers = [header for header, _ in columns][named_by:]
        return Group(whole(Text(title, style="italic"), console.width),
                     *(card(Text(" · ".join(row[:named_by]), style="bold"),
                            [f"{h}: {v}" for h, v in zip(headers, row[named_by:], strict=True) if v.strip()],
                            console.width) for row in rows))
    table = Table(title=Text(title))
    for (header, justify), w in zip(columns, widths, strict=True):
        table.add_column(cellwrap.wrap(header, w), justify=justify, width=w)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*(whole(Text(value), w) if i in figures else Text(cellwrap.wrap(value, w))
                        for i, (value, w) in enumerate(zip(row, widths, strict=True))))
    return table
