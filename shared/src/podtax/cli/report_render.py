"""The terminal rendering of `podtax report`: one table per test, flags explained, notes grouped.

Each table gets one line per cell when that fits the console, else two to three lines per cell (the
same facts stacked), so nothing is folded letter by letter even at 80 columns; a console too narrow for that
(40 columns) gets one block of lines per cell (cli/cards): never a figure cut or a column dropped. When stdout is not
a terminal (make, a pipe) the console is ``NON_TTY_WIDTH`` columns wide unless COLUMNS says otherwise.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from podtax.cli import cards, cellwrap
from podtax.cli.common import wide_console
from podtax.cli.report_view import (
    ReportView,
    Row,
    TestView,
    build_view,
    grouped_flags,
    grouped_notes,
    number_ranges,
    refs,
    shown_summary,
)
from podtax.cli.whole_escapes import Whole, whole
from podtax.event_payloads import printable, printable_tree
from podtax.flags import BLOCKING, LEGEND, ORDER, bound_mark
from podtax.pvalue import p_digits
from podtax.sides import change_word

VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "no detectable difference": "cyan",
                 "inconclusive": "yellow", "not comparable": "dim", "set by the parameters": ""}
FLAG_STYLE = "magenta"
STACKED_MODES = " |\n"  # a BIMODAL side's two modes, one a line in the narrow layout


def report_console() -> Console:
    return wide_console()


def _value(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:,.4g}" if abs(v) < 1000 else f"{v:,.0f}"


def _centre(c: dict[str, Any], side: str, sep: str = " | ") -> str:
    """A side's median, or its two modes when that side is BIMODAL (the analyzer's host_modes/pod_modes:
    "128.3 (n=6) | 182.6 (n=6)"; ``sep`` between them): one median would hide them."""
    modes = c.get(f"{side}_modes")
    shown = modes.replace(" | ", sep) if modes else _value(c[f"{side}_median"])
    # LOWER_BOUND: the side's runs counted objects given up while waiting at that time, the true value is larger;
    # WATCH_GAP / RETRIED: they timed it after a dropped watch or with a retry's wait in it, the true value is smaller
    mark = bound_mark(bool(c.get(f"{side}_lower_bound")), bool(c.get(f"{side}_upper_bound")))
    return mark + shown if c[f"{side}_median"] is not None else shown


def p_shown(c: dict[str, Any]) -> str:
    """A cell's adjusted p-value as the CLI tables write it: two significant digits, more when it would read as
    ALPHA (podtax.pvalue)."""
    p = c["p_adjusted"]
    return "—" if p is None else "<0.001" if p < 0.001 else p_digits(p, ".2g")


def side_names(c: dict[str, Any]) -> tuple[str, str]:
    """What a cell's sides are called: ('host', 'pod') for the pod tax, else the environments' names."""
    base, cand = c.get("baseline", "host"), c.get("candidate", "kubernetes")
    if (base, cand) == ("host", "kubernetes"):
        return "host", "pod"
    return base, cand or "—"


def effect(c: dict[str, Any]) -> str:
    """The ratio in words, as in the summary sentences: 'pod 50.5% slower', 'pod and host equal'."""
    r = c["ratio"]
    base, cand = side_names(c)
    if r is None:
        return "no ratio"
    if r == 1.0:
        return f"{cand} and {base} equal"
    return f"{cand} {abs(r - 1.0) * 100:.1f}% {change_word(r, c['higher_is_better'], c.get('unit', ''))}"


def _ci(c: dict[str, Any]) -> str:
    return "" if c["ci_low"] is None else f"[{c['ci_low']:.3f}, {c['ci_high']:.3f}]"


def _ratio(c: dict[str, Any]) -> str:
    return "—" if c["ratio"] is None else f"{c['ratio']:.3f}"


def _verdict(c: dict[str, Any]) -> Text:
    """The verdict as the sentence words it ("fewer" errors: `direction`), coloured by the verdict."""
    return Text(c.get("direction") or c["verdict"], style=VERDICT_STYLE.get(c["verdict"], ""))


def _effect(c: dict[str, Any]) -> Text:
    return Text(effect(c), style="" if c["verdict"] in ("faster", "slower") else "dim")


def _flags(c: dict[str, Any], sep: str) -> Text:
    return Text(sep.join(c["flags"]), style=FLAG_STYLE)


def _who(view: ReportView, test: TestView, row: Row, wrap: bool = False) -> list[str]:
    """Node, varying params and metric of a row; ``wrap``: the metric in lines of at most NAME_LINE characters."""
    parts = [] if view.single_node else [row.cell["node"]]
    if row.varying:
        parts.append(row.varying)
    if len(test.metrics) > 1:
        parts.append(wrap_name(row.cell["metric"]) if wrap else row.cell["metric"])
    return parts


NAME_LINE = 12


def wrap_name(name: str, width: int = NAME_LINE) -> str:
    """A metric name broken after its underscores into lines of at most ``width`` where it can be: the narrow
    layout cut "provisioned_max_ms" and "provisioned_p99_ms" alike to "provisioned_m…" / "provisioned_p…"; now
    "provisioned_\nmax_ms", whose last line tells them apart."""
    return cellwrap.wrap(name, width)


def _new_table() -> Table:
    return Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), show_edge=False, title=None)


def wide_table(view: ReportView, test: TestView, flag_sep: str = ", ") -> Table:
    """One line per cell (more only for several flags or a long node name)."""
    t = _new_table()
    who = [" ".join(_who(view, test, r)) for r in test.rows]
    cols = [("#", "right", True)]
    if any(who):
        cols.append(("node · params · metric" if len(test.metrics) > 1 and not view.single_node
                     else "params · metric" if len(test.metrics) > 1
                     else "node · params" if not view.single_node and any(r.varying for r in test.rows)
                     else "node" if not view.single_node else "params", "left", False))
    base, cand = side_names(test.rows[0].cell)
    cols += [(f"{base}\nn · median", "right", True), (f"{cand}\nn · median", "right", True),
             ("ratio [95% CI]", "right", True), ("effect", "left", True), ("p adj", "right", True),
             ("verdict", "left", True), ("flags", "left", False)]
    for name, just, no_wrap in cols:
        t.add_column(name, justify=just, no_wrap=no_wrap)
    for r, w in zip(test.rows, who, strict=True):
        c = r.cell
        t.add_row(f"#{r.number}", *([Whole(w)] if any(who) else []), f"{c['n_host']} · {_centre(c, 'host')}",
                  f"{c['n_pod']} · {_centre(c, 'pod')}", f"{_ratio(c)} {_ci(c)}".strip(), _effect(c),
                  p_shown(c), _verdict(c), _flags(c, flag_sep))
    return t


def stacked_table(view: ReportView, test: TestView) -> Table:
    """The same facts, two to four lines per cell, for narrow consoles."""
    t = _new_table()
    for name, just, no_wrap in (("#", "right", True), ("cell · flags", "left", False),
                                ("n · median", "right", True), ("ratio [95% CI]", "right", True),
                                ("verdict · effect", "left", False)):
        t.add_column(name, justify=just, no_wrap=no_wrap, overflow="fold")  # fold, never cut a name with "…"
    for r in test.rows:
        c = r.cell
        who = Text("\n".join(_who(view, test, r, wrap=True)) or "—")
        if c["flags"]:
            who.append("\n")
            who.append_text(_flags(c, " "))
        verdict = Text.assemble(_verdict(c), "\n", _effect(c), f"\np adj {p_shown(c)}")
        base, cand = side_names(c)
        t.add_row(f"#{r.number}", Whole(who), f"{base} {c['n_host']} · {_centre(c, 'host', STACKED_MODES)}\n"
                                       f"{cand} {c['n_pod']} · {_centre(c, 'pod', STACKED_MODES)}",
                  f"{_ratio(c)}\n{_ci(c)}".rstrip(), verdict)
    return t


def cell_cards(view: ReportView, test: TestView, width: int) -> Group:
    """The same facts, one block of lines per cell (cards.card), for consoles too narrow for the stacked table:
    it cut figures there ("[0.952, 0.9") and dropped the cell and verdict columns."""
    blocks = []
    for r in test.rows:
        c = r.cell
        base, cand = side_names(c)
        title = Text(f"#{r.number}", style="bold")
        who = " · ".join(_who(view, test, r))
        if who:
            title.append(f" {who}")
        blocks.append(cards.card(title, [f"{base} n={c['n_host']} · {_centre(c, 'host', STACKED_MODES)}",
                                         f"{cand} n={c['n_pod']} · {_centre(c, 'pod', STACKED_MODES)}",
                                         f"ratio {_ratio(c)} {_ci(c)}".rstrip(), f"p adj {p_shown(c)}",
                                         Text.assemble(_verdict(c), " · ", _effect(c)), _flags(c, " ")], width))
    return Group(*blocks)


def _fitting_table(con: Console, view: ReportView, test: TestView) -> Table | Group:
    """One line per cell if that fits, else one line per flag, else the stacked layout, else cards (rich would cut
    the stacked table's figures and drop its columns to fit)."""
    unbounded = con.options.update_width(100_000)
    for sep in (", ", "\n"):
        table = wide_table(view, test, sep)
        if con.measure(table, options=unbounded).maximum <= con.width:
            return table
    table = stacked_table(view, test)
    if cards.fits(con, table):
        return table
    return cell_cards(view, test, con.width)


def _header(view: ReportView, test: TestView) -> Text:
    head = Text(test.test, style="bold")
    if test.fixed:
        head.append(f": {test.fixed}")
    if len(test.metrics) == 1:
        c = test.rows[0].cell
        better = "higher" if c["higher_is_better"] else "lower"
        head.append(f" · {c['metric']} ({c['unit']}, {better} is better)")
    return head


def _hidden_note(view: ReportView, test: TestView) -> Text | None:
    if not test.hidden:
        return None
    metrics = ", ".join(dict.fromkeys(r.cell["metric"] for r in test.hidden))
    rows = "row" if len(test.hidden) == 1 else "rows"
    note = Text(f"{len(test.hidden)} more metric {rows} hidden ({metrics}); ", style="dim")
    if test.hidden_flags:
        note.append("flags raised only on them: ", style="dim")
        for i, (name, flagged) in enumerate(test.hidden_flags.items()):
            note.append(", " if i else "")
            note.append(name, style=FLAG_STYLE)
            note.append(f" {refs(view, flagged, metric=False)}", style="dim")
        note.append("; ", style="dim")
    note.append("show every metric with --all-metrics", style="dim")
    return note


def _bullet(con: Console, text: Text, indent: int = 2, hang: int = 2) -> None:
    """Print `text` indented, wrapped on words, continuation lines `hang` columns further in."""
    first, rest = " " * indent, " " * (indent + hang)
    width = max(20, con.width - indent - hang)
    for i, line in enumerate(whole(text, width).split("\n")):  # never inside a name's escape
        line.rstrip()
        con.print(Text.assemble(first if i == 0 else rest, line), soft_wrap=True)


def print_report(report: dict[str, Any], all_metrics: bool = False) -> None:
    con = report_console()
    report = printable_tree(report)  # names, units and words from the bus: never a terminal's control sequence
    cells = report["cells"]
    if not cells:
        con.print(f"campaign {report['campaign']}: no comparable results yet")
        for w in report.get("warnings", []):
            con.print(Text(f"  {printable(w)}"))  # text from the bus (a failure's words), never markup
        return
    view = build_view(report, all_metrics)
    scope = "every metric" if all_metrics else "primary metrics"
    nodes = f"node {view.nodes[0]}" if view.single_node else f"{len(view.nodes)} nodes"
    con.print(whole(Text.assemble(("podtax report — campaign ", "bold"), (report["campaign"], "bold"),
                                  f"  ({nodes}; {len(view.rows)} of {len(cells)} cells shown: {scope})"), con.width))
    for test in view.tests:
        con.print()
        con.print(whole(_header(view, test), con.width))
        con.print(_fitting_table(con, view, test))
        note = _hidden_note(view, test)
        if note is not None:
            con.print(note)
    pairs = sorted({side_names(r.cell) for r in view.rows if r.cell.get("candidate", "kubernetes")})
    ratios = ("ratio = " + ", ".join(f"{cand} median / {base} median" for base, cand in pairs) + " with its 95% CI"
              if pairs else "no ratio (one side only: compare two campaigns with `podtax compare`)")
    con.print(Text(f"{ratios}; verdict threshold "
                   f"±{report['threshold'] * 100:g}%; p adjusted ({report['correction']})", style="dim"))
    for w in report.get("warnings", []):
        con.print(Text(f"warning: {printable(w)}"))
    _print_flags(con, view)
    _print_notes(con, view)
    summary = shown_summary(report, view)
    if summary:
        con.print("\n[bold]Summary[/bold]")
        for s in summary:
            _bullet(con, Text(f"• {s['sentence']}"), hang=2)


def _print_flags(con: Console, view: ReportView) -> None:
    flags = grouped_flags(view.rows, ORDER)
    if not flags:
        return
    con.print("\n[bold]Flags[/bold]")
    for name, details in flags:
        line = Text.assemble((name, f"bold {FLAG_STYLE}"))
        meaning = LEGEND.get(name)
        if meaning:
            line.append(f": {meaning}")
        if name in BLOCKING:
            line.append(" (no verdict)", style="yellow")
        _bullet(con, line)
        for detail, rows in details:
            _bullet(con, Text(f"{refs(view, rows)}: {detail}"), indent=4)


def _print_notes(con: Console, view: ReportView) -> None:
    notes = grouped_notes(view.rows)
    if not notes:
        return
    con.print("\n[bold]Notes[/bold]")
    for note, rows in notes:
        where = (f"all {len(rows)} cells shown" if len(rows) == len(view.rows) and len(rows) > 3
                 else f"{'cell' if len(rows) == 1 else 'cells'} {number_ranges(r.number for r in rows)}")
        _bullet(con, Text(f"{where}: {note}"))  # cells first, as under Flags: a note may end in a full stop
