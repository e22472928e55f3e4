"""The narrowest layout of a CLI table: one block of lines per row ("card"), for a console too narrow for even
the stacked table (`podtax report` or `podtax compare` at 40 columns). rich gave such a table's columns less than
their figures needed and cut them ("[0.952, 0.9", "129.5 (n=7") or dropped whole columns, the cell's name and
verdict among them. A card keeps the row's identity on its first line and each fact on its own line below it,
wrapped only at spaces (whole_escapes.whole), so every figure and its unit stays whole at any width."""

from __future__ import annotations

from rich import box
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
    evenly, so a flag list broke at its '/' beside a wrapped date with room to spare). What is left goes to the
    columns whose cells take the most lines, while it makes each of them a line shorter (it went to the next column
    in order, though too little to put its cells on one line, a tool's version left on a second line anyway)."""
    widths = [max(map(_words if i in figures else cellwrap.longest, column)) for i, column in enumerate(texts)]
    full = [max(map(cellwrap.widest, column)) for column in texts]
    left = room - sum(widths)
    for i in sorted(range(len(texts)), key=lambda i: full[i] - widths[i]):
        if 0 < full[i] - widths[i] <= left:
            left -= full[i] - widths[i]
            widths[i] = full[i]
    distinct = [set(column) for column in texts]

    def lines(i: int, width: int) -> int:
        wrap = (lambda v: whole(Text(v), width).plain) if i in figures else (lambda v: cellwrap.wrap(v, width))
        return max(wrap(value).count("\n") + 1 for value in distinct[i])

    while left > 0:
        now = [lines(i, w) for i, w in enumerate(widths)]
        tallest = max(now, default=1)
        if tallest == 1:
            break
        grown = {}
        for i in (i for i, n in enumerate(now) if n == tallest):
            grown[i] = next((w for w in range(widths[i] + 1, min(full[i], widths[i] + left) + 1)
                             if lines(i, w) < tallest), None)
        cost = sum(w - widths[i] for i, w in grown.items() if w is not None)
        if None in grown.values() or cost > left:
            break
        for i, w in grown.items():
            widths[i] = w  # type: ignore[assignment]
        left -= cost
    return widths


def _pieces(column: list[str], figure: bool) -> list[int]:
    return [(_words if figure else cellwrap.longest)(value) for value in column]


def _too_long(pieces: list[list[int]], heads: list[int], room: int) -> set[int] | None:
    """The rows (indexes) to show as cards so that the others' columns fit ``room`` (``pieces[c][r]``: row r's
    longest unbreakable piece in column c; ``heads``: the headers'): a row with one long value (a 253-character node
    name, a 300-character flag) turned the whole table into cards. Rows are taken out from the column furthest above
    its median, its widest first; None when the usual rows do not fit either, or more than a quarter would go."""
    rows = len(pieces[0]) if pieces else 0
    order = [sorted(range(rows), key=lambda r, c=c: -pieces[c][r]) for c in range(len(pieces))]
    usual = [max(head, sorted(column)[rows // 2] if rows else 0) for head, column in zip(heads, pieces, strict=True)]
    at = [0] * len(pieces)
    out: set[int] = set()

    def width(c: int) -> int:
        while at[c] < rows and order[c][at[c]] in out:
            at[c] += 1
        return max(heads[c], pieces[c][order[c][at[c]]] if at[c] < rows else 0)

    while sum(width(c) for c in range(len(pieces))) > room:
        c = max(range(len(pieces)), key=lambda c: width(c) - usual[c])
        widest = width(c)
        if widest <= usual[c]:
            return None
        while at[c] < rows and (order[c][at[c]] in out or pieces[c][order[c][at[c]]] == widest):
            out.add(order[c][at[c]])
            at[c] += 1
        if len(out) > max(1, rows // 4) or len(out) == rows:
            return None
    return out


def fitted(console: Console, title: str, columns: list[tuple[str, str]], rows: list[list[str]],
           named_by: int = 1, figures: tuple[int, ...] = (), light: bool = False) -> Table | Group:
    """A table of plain-text ``rows`` (``columns``: header and justify) as wide as ``console``: each column at least
    its longest unbreakable piece (cellwrap: a cell breaks only at a space or after '_' or '/'), the rest of the
    room to the columns furthest from one line; cards when even those pieces do not fit (only the few rows with a
    long value, below the table of the others, when that is enough). rich gave each column a share of the width and
    cut what did not fit with '…' ("events_per_s…", "996.…" at 80 columns). A card is named by its row's first
    ``named_by`` cells; the columns numbered in ``figures`` (a value and its unit) break only at spaces. ``light``:
    the report's box (a rule under the header, no edges; 4 columns more for the cells)."""
    room = console.width - (3 * len(columns) - 3 if light else 3 * len(columns) + 1)  # borders and padding
    headers = [header for header, _ in columns]
    pieces = [_pieces([row[i] for row in rows], i in figures) for i in range(len(columns))]
    wide = _too_long(pieces, _pieces(headers, False), room)
    if wide is None:
        return Group(whole(Text(title, style="italic"), console.width),
                     *_cards(headers, rows, named_by, console.width))
    kept = [row for r, row in enumerate(rows) if r not in wide]
    widths = _widths([[header, *(row[i] for row in kept)] for i, header in enumerate(headers)], room, figures)
    table = Table(title=Text(title), **({"box": box.SIMPLE_HEAD, "pad_edge": False, "show_edge": False}
                                        if light else {}))  # type: ignore[arg-type]
    for (header, justify), w in zip(columns, widths, strict=True):
        table.add_column(cellwrap.wrap(header, w), justify=justify, width=w)  # type: ignore[arg-type]
    for row in kept:
        table.add_row(*(whole(Text(value), w) if i in figures else Text(cellwrap.wrap(value, w))
                        for i, (value, w) in enumerate(zip(row, widths, strict=True))))
    if not wide:
        return table
    return Group(table, whole(Text(f"{len(wide)} row(s) with a value too long for the table:", style="italic"),
                              console.width),
                 *_cards(headers, [row for r, row in enumerate(rows) if r in wide], named_by, console.width))


def _cards(headers: list[str], rows: list[list[str]], named_by: int, width: int) -> list[Group]:
    return [card(Text(" · ".join(row[:named_by]), style="bold"),
                 [f"{h}: {v}" for h, v in zip(headers[named_by:], row[named_by:], strict=True) if v.strip()], width)
            for row in rows]
