"""The control-plane phase table of `podtax report`: per phase, both backends side by side.

Rows come from the analyzer (GET /api/campaigns/{c}/phase-table, or computed from a DuckDB file with
--db): per phase the runs' median per-object latency (p50, ms) and the phase's makespan (s), each side's
median over runs, the ratio candidate / baseline with its 95% CI, the verdict and the flags, and the
phase's definition beside its numbers. A phase one backend lacks says why (Nomad has no Bound phase).
One line a row when that fits the console, else a table wrapped at spaces, else one block of lines per row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from podtax.cli import cards
from podtax.cli.cellwrap import fit_widths, wrap
from podtax.cli.common import api_headers, api_json, fail, offline_report, unreachable
from podtax.cli.report_render import _value  # a figure as the report's tables write it (was a copy of it)
from podtax.event_payloads import printable_tree
from podtax.flags import bound_mark
from podtax.param_labels import Labels, label
from podtax.phases import TEMPLATES

STATISTIC = {"p50": "p50 latency (ms)", "makespan": "makespan (s)", "objects": "objects · p50 · p99 ms"}
VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "no detectable difference": "cyan",
                 "inconclusive": "yellow", "not comparable": "dim"}


def has_control_plane(report: dict[str, Any]) -> bool:
    return any(c.get("test") in TEMPLATES for c in report.get("cells", []))


def from_api(base: str, campaign: str, threshold: float, correction: str) -> dict[str, Any] | None:
    """The phase table from the analyzer's API, asked with the CLI's bearer token as every command asks it
    (an analyzer whose reads need the token answers 401 without it); None when this analyzer does not
    serve the table (404). Unreachable, refused or not JSON: one line and exit 1, as `podtax report`."""
    url = f"{base.rstrip('/')}/api/campaigns/{quote(campaign, safe='')}/phase-table"
    try:
        resp = httpx.get(url, params={"threshold": threshold, "correction": correction}, headers=api_headers(base),
                         timeout=300)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise unreachable(base, exc) from None
    if resp.status_code == 404:
        return None
    if resp.status_code >= 400:
        raise fail(f"the analyzer answered {resp.status_code} for the phase table: {resp.text[:500]}")
    return api_json(resp, base)


def from_db(db: Path, campaign: str, threshold: float, correction: str) -> dict[str, Any]:
    return offline_report(db, campaign, threshold, correction, phases=True)


def _ratio(r: dict[str, Any]) -> str:
    if r["ratio"] is None:
        return "—"
    ci = f" [{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r["ci_low"] is not None else ""
    return f"{r['ratio']:.3f}{ci}"


def _side(r: dict[str, Any], side: str) -> str:
    """Runs · median of the row's ``side`` (baseline, candidate); "≥ median" when it is a lower bound (LOWER_BOUND:
    objects given up counted at that time), "≤ median" an upper one (WATCH_GAP, RETRIED: times seen late or holding
    a retry's wait)."""
    n, median = r[f"n_{side}"], r[f"{side}_median"]
    mark = bound_mark(r.get(f"{side}_lower_bound", False), r.get(f"{side}_upper_bound", False)) * (median is not None)
    return f"{n} · {mark}{_value(median)}" if n else "—"


def _pooled(r: dict[str, Any], env: str | None) -> str:
    side = (r.get("pooled") or {}).get(env or "")
    if not side:
        return "—"
    p50, p99 = (bound_mark(bool(side.get(f"{q}_lower_bound")), bool(side.get(f"{q}_upper_bound")))
                + _value(side[f"{q}_ms"]) for q in ("p50", "p99"))
    return f"{side['objects']} · {p50} · {p99}"


def _groups(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["cluster"], r["node"], r["test"], r["params"]), []).append(r)
    return out


def _definition(r: dict[str, Any]) -> str:
    definitions = r.get("definitions") or {}
    if len(definitions) > 1 and len(set(definitions.values())) > 1:
        return "\n".join(f"{env}: {text}" for env, text in definitions.items())
    return r["definition"]


def _columns(base: str, cand: str | None) -> list[tuple[str, str]]:
    """(header, justify) of each column; a baseline-only table has no candidate, ratio or verdict."""
    cols = [("phase", "left"), ("statistic", "left"), (f"{base}\nruns · median", "right")]
    if cand:
        cols += [(f"{cand}\nruns · median", "right"), (f"{cand}/{base}\nratio [95% CI]", "right"), ("verdict", "left")]
    return [*cols, ("flags", "left")]


def _cells(rows: list[dict[str, Any]], base: str, cand: str | None) -> list[list[Text]]:
    """Each row's cells, the phase first (blank where it repeats the row above's)."""
    out: list[list[Text]] = []
    previous = None
    for r in rows:
        phase = Text(r["phase"] if r["phase"] != previous else "", style="bold")
        previous = r["phase"]
        stat = Text(STATISTIC[r["statistic"]], style="bold" if r["primary"] else "dim" if r["statistic"] == "objects"
                    else "")
        if r["statistic"] == "objects":  # descriptive: every object pooled, no ratio
            sides = [Text(_pooled(r, env), style="dim") for env in (base, cand) if env]
            out.append([phase, stat, *sides, *([Text(""), Text("")] if cand else []), Text("")])
            continue
        cells = [phase, stat, Text(_side(r, "baseline"))]
        if cand:
            verdict = r["verdict"] or "—"
            if r["ratio"] is None and r["note"]:
                verdict = "not comparable"
            cells += [Text(_side(r, "candidate")),
                      Text(_ratio(r)), Text(verdict, style=VERDICT_STYLE.get(verdict, "dim"))]
        out.append([*cells, Text(", ".join(r["flags"]), style="magenta")])
    return out


def _new_table() -> Table:
    return Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), show_edge=False)


GAP = 3  # cells between two columns: a padding each side and the box's divider


def _table(rows: list[dict[str, Any]], width: int | None = None) -> Table:
    """One line per row; ``width``: the console's, for a table that does not fit it on one line a row. Then the
    phase heads its rows instead of taking a column, and every cell breaks into lines only at a space or after
    '_', '/' or '·' (cellwrap), never inside a word or '≥ value': rich folded 'kubernetes' to 'kubernete' / 's'
    and cut flags mid-word at 80 columns."""
    base, cand = rows[0]["baseline"], rows[0]["candidate"]
    columns, body = _columns(base, cand), _cells(rows, base, cand)
    t = _new_table()
    if width is None:
        for i, (header, justify) in enumerate(columns):
            last = i == len(columns) - 1
            t.add_column(header, justify=justify, no_wrap=not last, overflow="fold",
                         min_width=max(len(r["phase"]) for r in rows) if i == 0 else None)
        for cells in body:
            t.add_row(*cells)
        return t
    columns, narrow = columns[1:], []
    for phase, *cells in body:
        if phase.plain:
            narrow.append([phase, *(Text("") for _ in cells[1:])])
        narrow.append(cells)
    widths = fit_widths([[header] + [cells[i].plain for cells in narrow] for i, (header, _) in enumerate(columns)],
                        width - GAP * (len(columns) - 1))
    for (header, justify), w in zip(columns, widths, strict=True):
        t.add_column(wrap(header, w), justify=justify, width=w, overflow="fold")
    for cells in narrow:
        t.add_row(*(Text(wrap(c.plain, w), style=c.style) for c, w in zip(cells, widths, strict=True)))
    return t


def _cards(rows: list[dict[str, Any]], width: int) -> Group:
    """One block of lines per row (cards.card), for a console too narrow for even the wrapped table (40 columns):
    the phase and statistic first, then each column's header and value on a line."""
    base, cand = rows[0]["baseline"], rows[0]["candidate"]
    headers = [" ".join(h.split()) for h, _ in _columns(base, cand)]
    blocks = []
    for r, (_, stat, *cells) in zip(rows, _cells(rows, base, cand), strict=True):
        facts = [Text.assemble(f"{h}: ", c) for h, c in zip(headers[2:], cells, strict=True) if c.plain]
        blocks.append(cards.card(Text.assemble((r["phase"], "bold"), " · ", stat), facts, width))
    return Group(*blocks)


def _print_definitions(con: Console, rows: list[dict[str, Any]]) -> None:
    """Each phase's definition, right under its numbers, one line per backend where they differ."""
    seen: set[str] = set()
    for r in rows:
        if r["phase"] in seen:
            continue
        seen.add(r["phase"])
        lines = _definition(r).split("\n")
        con.print(Text.assemble("  ", (r["phase"], "bold"), ": ", (lines[0], "dim")), highlight=False)
        for line in lines[1:]:
            con.print(Text.assemble("  ", " " * len(r["phase"]), "  ", (line, "dim")), highlight=False)


def print_phase_table(con: Console, table: dict[str, Any], labels: Labels | None = None) -> None:
    """``labels``: the report's params_labels (its rows are its cells'), so a heading reads as the report's."""
    table = printable_tree(table)  # names and words from the bus: never a terminal's control sequence
    rows = table.get("rows", [])
    if not rows:
        return
    labels = printable_tree(labels or {})  # escaped as the rows
    con.print()
    con.print(Text("Control-plane phases, side by side", style="bold"))
    for (cluster, node, test, params), group in _groups(rows).items():
        where = f"{node}" + (f" ({cluster})" if cluster != "local" else "")
        shown_params = label(labels, test, params)
        con.print(Text.assemble((test, "bold"), f": {shown_params}" if shown_params else "",  # none: 't · node'
                                f" · {where} · lower is better for every phase"))
        shown: Table | Group = _table(group)
        if con.measure(shown, options=con.options.update_width(100_000)).maximum > con.width:
            shown = _table(group, width=con.width)
            if con.measure(shown, options=con.options.update_width(100_000)).minimum > con.width:
                shown = _cards(group, con.width)  # rich would cut its figures ("1." / "51" / "4") to fit
        con.print(shown)
        con.print(Text("  definitions (from -> to):", style="dim"))
        _print_definitions(con, group)
    con.print(Text("median = median over runs of each run's p50 per-object latency or of its makespan; "
                   "ratio = candidate median / baseline median with its 95% CI; bold = primary metric; "
                   "objects · p50 · p99 = every object of every run pooled (descriptive, no ratio); "
                   "≥ = a lower bound (LOWER_BOUND), ≤ = an upper bound (WATCH_GAP, RETRIED), ≶ = either",
                   style="dim"))
    for note in table.get("notes", []):
        con.print(Text(f"• {note}"), highlight=False)
