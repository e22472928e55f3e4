"""`podtax report CAMPAIGN`: the pod/host comparison table, flags explained, summary sentences.

By default the report comes from the analyzer's HTTP API (PODTAX_API_URL, else the one `podtax up`
started, else http://127.0.0.1:8700); ``--db FILE`` computes it from a DuckDB file directly (needs
the podtax-analyzer package). ``--json`` prints ``{"campaign", "cells", "summary", ...}`` for scripts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import httpx
import typer
from rich.table import Table
from rich.text import Text

from podtax.cli.common import api_url, console, fail

VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "no detectable difference": "cyan",
                 "inconclusive": "yellow"}
FLAG_STYLE = "magenta"


def _from_api(base: str, campaign: str, threshold: float, correction: str) -> dict[str, Any]:
    url = f"{base.rstrip('/')}/api/campaigns/{quote(campaign, safe='')}/comparisons"
    try:
        resp = httpx.get(url, params={"threshold": threshold, "correction": correction}, timeout=300)
    except httpx.HTTPError as exc:
        raise fail(f"cannot reach the analyzer at {base} ({exc}); start it with `podtax up`, "
                   f"set PODTAX_API_URL, or read a database file with --db") from None
    if resp.status_code == 404:
        raise fail(f"unknown campaign {campaign!r} (the analyzer at {base} has no run of it)")
    if resp.status_code >= 400:
        raise fail(f"the analyzer answered {resp.status_code}: {resp.text[:500]}")
    return resp.json()


def _from_db(db: Path, campaign: str, threshold: float, correction: str) -> dict[str, Any]:
    try:
        import duckdb
        from podtax_analyzer.comparisons import UnknownCampaign, compare_campaign
    except ImportError:
        raise fail("--db needs the analyzer package: pip install -e services/analyzer "
                   "(or drop --db to ask the analyzer's HTTP API)") from None
    if not db.is_file():
        raise fail(f"no database file at {db}")
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error as exc:
        raise fail(f"cannot open {db} ({exc}); if the analyzer is running it holds the file: "
                   f"drop --db to ask its HTTP API") from None
    try:
        return compare_campaign(con, campaign, threshold=threshold, correction=correction).model_dump(mode="json")
    except UnknownCampaign:
        raise fail(f"unknown campaign {campaign!r} (no run of it in {db})") from None
    finally:
        con.close()


def _num(v: float | None, fmt: str = ".3f") -> str:
    return "—" if v is None else format(v, fmt)


def _value(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:,.4g}" if abs(v) < 1000 else f"{v:,.0f}"


def _table(report: dict[str, Any]) -> Table:
    t = Table(title=f"podtax report — campaign {report['campaign']}", show_lines=False,
              caption=f"ratio = pod median / host median, 95% CI; threshold ±{report['threshold'] * 100:g}%; "
                      f"p adjusted ({report['correction']})")
    for col, just in (("#", "right"), ("node", "left"), ("test / params", "left"), ("metric", "left"),
                      ("host n · median", "right"), ("pod n · median", "right"), ("ratio [95% CI]", "right"),
                      ("p adj", "right"), ("verdict", "left"), ("flags", "left")):
        t.add_column(col, justify=just, overflow="fold")
    for i, c in enumerate(report["cells"], 1):
        ratio = "—" if c["ratio"] is None else f"{c['ratio']:.3f}"
        if c["ci_low"] is not None:
            ratio += f" [{c['ci_low']:.3f}, {c['ci_high']:.3f}]"
        verdict = Text(c["verdict"], style=VERDICT_STYLE.get(c["verdict"], ""))
        if c["verdict"] in ("faster", "slower") and c["ratio"] is not None:
            verdict.append(f" {abs(c['ratio'] - 1) * 100:.1f}%")
        t.add_row(str(i), c["node"], f"{c['test']} {c['params']}", f"{c['metric']} ({c['unit']})",
                  f"{c['n_host']} · {_value(c['host_median'])}", f"{c['n_pod']} · {_value(c['pod_median'])}",
                  ratio, "—" if c["p_adjusted"] is None else f"{c['p_adjusted']:.2g}", verdict,
                  Text(", ".join(c["flags"]), style=FLAG_STYLE))
    return t


def _print(report: dict[str, Any]) -> None:
    cells = report["cells"]
    if not cells:
        console.print(f"campaign {report['campaign']}: no comparable results yet")
        for w in report.get("warnings", []):
            console.print(f"  {w}")
        return
    console.print(_table(report))
    flagged = [(i, c) for i, c in enumerate(cells, 1) if c["flags"]]
    if flagged:
        console.print("\n[bold]Flags[/bold]")
        for i, c in flagged:
            for name in c["flags"]:
                console.print(Text.assemble(f"  #{i} {c['node']} {c['test']} {c['metric']}: ",
                                            (name, FLAG_STYLE), f" — {c['flag_details'].get(name, '')}"))
    noted = [(i, c) for i, c in enumerate(cells, 1) if c.get("warnings")]
    if noted:
        console.print("\n[bold]Notes[/bold]")
        for i, c in noted:
            for w in c["warnings"]:
                console.print(f"  #{i} {c['node']} {c['metric']}: {w}", highlight=False)
    if report["summary"]:
        console.print("\n[bold]Summary[/bold]")
        for s in report["summary"]:
            console.print(f"  • {s['sentence']}", highlight=False)


def report(
    campaign: Annotated[str, typer.Argument(help="Campaign name.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    api: Annotated[str | None, typer.Option("--api", help="Analyzer API URL (default: PODTAX_API_URL).")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="Read this DuckDB file directly instead of the API.")] = None,
    threshold: Annotated[float, typer.Option(help="Practical threshold as a fraction (0.01 = 1%).")] = 0.01,
    correction: Annotated[str, typer.Option(help="Multiple-comparison correction: holm or bh.")] = "holm",
) -> int:
    """Compare pod against host for a campaign: ratios with confidence intervals, verdicts and flags."""
    if correction not in ("holm", "bh"):
        raise fail(f"unknown correction {correction!r}; use holm or bh", code=2)
    if not 0 <= threshold < 1:
        raise fail(f"threshold must be a fraction in [0, 1), got {threshold}", code=2)
    data = (_from_db(db, campaign, threshold, correction) if db is not None
            else _from_api(api or api_url(), campaign, threshold, correction))
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _print(data)
    return 0


def register(app: typer.Typer) -> None:
    app.command()(report)
