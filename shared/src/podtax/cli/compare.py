"""`podtax compare BASE NEW`: did each cell's ratio change between two campaigns?

Asks the analyzer's /api/compare (the statistics live there; see podtax_analyzer.campaign_compare)
and prints one line per matching cell (stacked on two to five lines, or a block of lines per cell, where the
console is too narrow: see `fitting`): what is compared (the candidate/baseline ratio, or the median of
a cell with one environment), its value in each campaign, their difference with its 95% interval, the
verdict and the flags; ``--json`` prints the API's answer. Exit status 0 whatever the verdicts; NO_COMMON_CELL
(3, as `campaign status` uses 3 for an answer that is not an error) when the two campaigns share no cell, with
one line saying so instead of an empty table; 1 when the comparison cannot be made (an unknown campaign, the
analyzer unreachable); 2 for a usage mistake.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from podtax.cli import cards
from podtax.cli.common import (
    API_HELP,
    THRESHOLD_HELP,
    api_json,
    api_option,
    api_url,
    campaign_name,
    fail,
    practical_threshold,
    wide_console,
)
from podtax.cli.export import fetch
from podtax.cli.report_render import p_shown
from podtax.cli.whole_escapes import Whole, whole
from podtax.event_payloads import printable_tree
from podtax.flags import BOUND_MARKS
from podtax.param_labels import Labels, label

NO_COMMON_CELL = 3  # exit status: the campaigns share no (node, test, params, metric), nothing was compared
STYLE = {"improved": "bold green", "worsened": "bold red", "no detectable difference": "cyan",
         "inconclusive": "yellow", "not comparable": "dim", "set by the parameters": "default"}


def _r(v: float | None, signed: bool = False, ratio: bool = True) -> str:
    if v is None:
        return "—"
    if ratio:
        return f"{v:+.3f}" if signed else f"{v:.3f}"
    return f"{v:+.4g}" if signed else f"{v:.4g}"


def _bounded(c: dict[str, Any], which: str, ratio: bool) -> str:
    """BASE's or NEW's compared figure, marked "≥ 1.234" when the true one is at least it (its bound field)."""
    mark = BOUND_MARKS.get(c.get(f"{which}_bound") or "", "")
    return mark + _r(c[f"{which}_value"], ratio=ratio)


def _figures(c: dict[str, Any]) -> dict[str, str]:
    """A cell's figures as every layout prints them."""
    ratio = c["base_ratio"] is not None or c["new_ratio"] is not None or "ratio" in c["compared"]
    ci = (f"({_r(c['diff_ci_low'], True, ratio)} to {_r(c['diff_ci_high'], True, ratio)})"
          if c["diff_ci_low"] is not None else "")
    return {"base": _bounded(c, "base", ratio), "new": _bounded(c, "new", ratio), "diff": _r(c["diff"], True, ratio),
            "ci": ci, "p": p_shown(c), "flags": " ".join(c["flags"])}


def _verdict(c: dict[str, Any]) -> Text:
    return Text(c["verdict"], style=STYLE[c["verdict"]])


def _what(c: dict[str, Any], labels: Labels) -> str:
    """A cell's test and params as its label shows them (podtax.param_labels)."""
    return " ".join(x for x in (c["test"], label(labels, c["test"], c["params"])) if x)


def wide_table(title: str, cells: list[dict[str, Any]], labels: Labels) -> Table:
    """One line per cell: every column as wide as its longest value (a figure is never wrapped); what is compared
    said once in the title when every cell compares the same, no flags column when no cell has one."""
    compared = {c["compared"] for c in cells}
    one = len(compared) == 1
    table = Table(title=Text(f"{title}: {compared.pop()}" if one else title))
    flags = any(c["flags"] for c in cells)
    columns = ("node", "test / params", "metric", *(() if one else ("compared",)), "base", "new",
               "difference (95% CI)", "p adj.", "verdict", *(("flags",) if flags else ()))
    for col in columns:
        table.add_column(col, no_wrap=True)
    for c in cells:
        f = _figures(c)
        texts = (c["node"], _what(c, labels), c["metric"], *(() if one else (c["compared"],)), f["base"],
                 f["new"], f"{f['diff']} {f['ci']}".rstrip(), f["p"])
        table.add_row(*map(Text, texts), _verdict(c),  # Text: a name is never read as markup
                      *((Text(f["flags"]),) if flags else ()))
    return table


def stacked_table(title: str, cells: list[dict[str, Any]], labels: Labels) -> Table:
    """The same facts in four columns, two to five lines per cell, for a console too narrow for one line: rich
    squeezed the ten columns at 80, wrapping figures mid-number ("-0.04" / "8") and headers mid-word."""
    table = Table(title=Text(title))
    table.add_column("cell · compared", overflow="fold")
    table.add_column("base\nnew", justify="right", no_wrap=True)
    table.add_column("difference\n(95% CI)", justify="right", no_wrap=True)
    table.add_column("verdict · p adj.\nflags", overflow="fold")
    for c in cells:
        f = _figures(c)
        table.add_row(Whole("\n".join((c["node"], _what(c, labels), c["metric"], c["compared"]))),
                      Text(f"{f['base']}\n{f['new']}"), Text(f"{f['diff']}\n{f['ci']}".rstrip()),
                      Whole(Text.assemble(_verdict(c), f"\np adj. {f['p']}", f"\n{f['flags']}" if f["flags"] else "")))
    return table


def change_cards(cells: list[dict[str, Any]], width: int, labels: Labels) -> Group:
    """One block of lines per cell (cards.card), for a console too narrow for the stacked table."""
    blocks = []
    for c in cells:
        f = _figures(c)
        blocks.append(cards.card(Text(f"{c['node']} · {_what(c, labels)} · {c['metric']}", style="bold"),
                                 [c["compared"], f"base {f['base']}", f"new {f['new']}",
                                  f"difference {f['diff']} {f['ci']}".rstrip(), f"p adj. {f['p']}", _verdict(c),
                                  Text(f["flags"])], width))
    return Group(*blocks)


def fitting(console: Console, title: str, cells: list[dict[str, Any]], labels: Labels) -> Table | Group:
    """One line per cell if that fits ``console``, else the stacked table, else cards: never a figure cut or
    wrapped, never the cell's name dropped. ``labels``: the comparison's params_labels."""
    unbounded = console.options.update_width(100_000)
    table = wide_table(title, cells, labels)
    if console.measure(table, options=unbounded).maximum <= console.width:
        return table
    table = stacked_table(title, cells, labels)
    if cards.fits(console, table):
        return table
    return Group(whole(Text(title, style="italic"), console.width), change_cards(cells, console.width, labels))


def print_change(data: dict[str, Any], *, all_metrics: bool = False) -> None:
    console = wide_console()
    data = printable_tree(data)  # names and words from the bus: never a terminal's control sequence
    cells = [c for c in data["cells"] if all_metrics or c["primary"]] or data["cells"]
    title = (f"{data['new']} against {data['base']} (threshold ±{data['threshold'] * 100:.1f}%, "
             f"{data['correction']} correction)")
    labels = data.get("params_labels", {})  # both campaigns' cells
    console.print(fitting(console, title, cells, labels))
    if any(c.get("base_bound") or c.get("new_bound") for c in cells):
        console.print("≥ / ≤ / ≶: the figure is only a bound: it rests on objects given up while waiting "
                      "(LOWER_BOUND) or on times seen after a dropped watch or holding a retry's wait (WATCH_GAP, "
                      "RETRIED); the true one is at least / "
                      "at most it / either", highlight=False)
    for c in cells:  # wrapped never inside a name's escape
        console.print(whole(Text(f"- {c['node']} {_what(c, labels)} {c['metric']}: {c['sentence']}"), console.width))
    for side in ("base", "new"):  # the params as the table's labels show them; only_in_* keep them whole
        names = data.get(f"only_in_{side}_labels") or data[f"only_in_{side}"]
        if names:
            console.print(whole(Text(f"Only in {data[side]}: {', '.join(names)}"), console.width))


def compare(
    base: Annotated[str, typer.Argument(help="The campaign to compare against (e.g. before an upgrade).",
                                         callback=campaign_name)],
    new: Annotated[str, typer.Argument(help="The campaign to compare (e.g. after it).", callback=campaign_name)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    api: Annotated[str | None, typer.Option("--api", help=API_HELP, callback=api_option)] = None,
    threshold: Annotated[float, typer.Option(help=THRESHOLD_HELP, callback=practical_threshold)] = 0.01,
    correction: Annotated[str, typer.Option(help="Multiple-comparison correction: holm or bh.")] = "holm",
    all_metrics: Annotated[bool, typer.Option("--all-metrics", help="Show every metric, not only the primary "
                                                                    "ones (not with --json, which always has all).")]
    = False,
) -> int:
    """Compare two campaigns cell by cell: each ratio, their difference with a CI, a verdict."""
    if correction not in ("holm", "bh"):
        raise fail(f"unknown correction {correction!r}; use holm or bh", code=2)
    if base == new:  # the analyzer has nothing to compare: every cell against itself
        raise fail(f"BASE and NEW are both {base!r}: name two different campaigns (e.g. before and after an "
                   f"upgrade)", code=2)
    if as_json and all_metrics:  # else dropped without a word (as report refuses it)
        raise fail("--all-metrics is for the terminal comparison: --json always has every metric (each cell's "
                   "`primary` says which is the headline); drop --all-metrics", code=2)
    data = api_json(fetch("/api/compare", {"base": base, "new": new, "threshold": threshold,
                                           "correction": correction}, api=api), api_url(api))
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
    elif data["cells"]:
        print_change(data, all_metrics=all_metrics)
    if not data["cells"]:
        raise fail(f"{base} and {new} have no cell in common (no node, test, params and metric in both; "
                   f"{len(data['only_in_base'])} only in {base}, {len(data['only_in_new'])} only in {new}): "
                   f"nothing to compare", code=NO_COMMON_CELL)
    return 0


HELP = "\n\n".join((
    "Compare two campaigns cell by cell: each ratio, their difference with a CI, a verdict.",
    f"Exit status: 0 when at least one cell (node, test, params, metric) is in both campaigns, whatever the "
    f"verdicts; {NO_COMMON_CELL} when none is, so nothing was compared (one line says so, with how many cells "
    f"each campaign has alone); 1 when the comparison cannot be made (an unknown campaign, no analyzer); 2 for "
    f"a usage mistake."))


def register(app: typer.Typer) -> None:
    app.command(help=HELP)(compare)
