"""`podtax report CAMPAIGN`: the comparison table of the campaign's two sides (pod/host, nomad/kubernetes),
flags explained, summary sentences, and for control-plane campaigns the phase table (report_phases.py).

By default the report comes from the analyzer's HTTP API (PODTAX_API_URL, else the one `podtax up`
started, else http://127.0.0.1:8700); ``--db FILE`` computes it from a DuckDB file directly (needs
the podtax-analyzer package). ``--json`` prints ``{"campaign", "cells", "summary", ...}`` for scripts,
every cell with a boolean ``primary``. The terminal shows only primary metrics unless ``--all-metrics``
(rendering in report_render.py, row selection in report_view.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import httpx
import typer

from podtax.cli.common import (
    API_HELP,
    THRESHOLD_HELP,
    a_path,
    api_headers,
    api_json,
    api_option,
    api_url,
    campaign_name,
    fail,
    not_a_file,
    offline_report,
    practical_threshold,
    unreachable,
)
from podtax.cli.report_phases import from_api as phases_from_api
from podtax.cli.report_phases import from_db as phases_from_db
from podtax.cli.report_phases import has_control_plane, print_phase_table
from podtax.cli.report_render import print_report, report_console
from podtax.cli.report_view import mark_primary
from podtax.cli.waiting import waiting


def _from_api(base: str, campaign: str, threshold: float, correction: str) -> dict[str, Any]:
    url = f"{base.rstrip('/')}/api/campaigns/{quote(campaign, safe='')}/comparisons"
    try:
        with waiting("waiting for the analyzer"):  # short: a wrapped line is not rewritten in place
            resp = httpx.get(url, params={"threshold": threshold, "correction": correction},
                             headers=api_headers(base), timeout=300)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise unreachable(base, exc, "start it with `podtax up`, set PODTAX_API_URL, or read a database file "
                          "with --db") from None
    if resp.status_code == 404:
        raise fail(f"unknown campaign {campaign!r} (the analyzer at {base} has no run of it)")
    if resp.status_code >= 400:
        raise fail(f"the analyzer answered {resp.status_code}: {resp.text[:500]}")
    return api_json(resp, base)


def _from_db(db: Path, campaign: str, threshold: float, correction: str) -> dict[str, Any]:
    return offline_report(db, campaign, threshold, correction)


def _write_html(path: Path, campaign: str, api: str | None, threshold: float, correction: str,
                compare: str | None, simulate: Path | None = None, seeds: int = 10) -> int:
    from podtax.cli import report_simulation
    from podtax.cli.export import download, fetch, writable

    writable(path)  # before the analyzer renders the page
    result = None
    if simulate is not None:  # first: it reads the workload file before it asks the analyzer, whose being down was
        try:                  # said before a workload that does not validate (exit 1, not 2; sweep hU)
            result = report_simulation.run(campaign, simulate, seeds, api)
        except report_simulation.SimulationFailed as exc:  # a workload that does not validate: a usage mistake, 2
            if exc.code == 1:  # the analyzer's own line, as without --simulate (unknown campaign, cannot reach), not
                fetch(f"/api/campaigns/{quote(campaign, safe='')}", api=api)  # the child's (review rU2)
            raise fail(f"--simulate: {exc}", exc.code) from None
    params = {"threshold": threshold, "correction": correction, **({"compare": compare} if compare else {})}
    section = report_simulation.section(result, simulate) if simulate is not None and result is not None else None
    download(f"/report/{quote(campaign, safe='')}", params, path, api=api,
             then=None if section is None else lambda page: report_simulation.insert_into(page, section))
    typer.echo(f"wrote {path}")
    return 0


def report(
    campaign: Annotated[str, typer.Argument(help="Campaign name.", callback=campaign_name)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    api: Annotated[str | None, typer.Option("--api", help=API_HELP, callback=api_option)] = None,
    # parser=a_path: an empty path is refused, where typer made it ".", the current folder
    db: Annotated[Path | None, typer.Option("--db", parser=a_path, metavar="<path>",
                                            help="Read this DuckDB file directly instead of the API.")] = None,
    threshold: Annotated[float, typer.Option(help=THRESHOLD_HELP, callback=practical_threshold)] = 0.01,
    correction: Annotated[str, typer.Option(help="Multiple-comparison correction: holm or bh.")] = "holm",
    all_metrics: Annotated[bool, typer.Option("--all-metrics", help="Show every metric, not only each test's "
                                                                    "primary one (not with --json, which always has "
                                                                    "all, nor --html, whose page has its full "
                                                                    "table).")]
    = False,
    html: Annotated[Path | None, typer.Option("--html", parser=a_path, metavar="<path>",
                                              help="Write the analyzer's self-contained HTML report (plots "
                                                   "included) to this file, in an existing folder (a regular file "
                                                   "there is replaced); not with --json or --db.")] = None,
    compare: Annotated[str | None, typer.Option("--compare", help="With --html: add a comparison with this "
                                                                  "(base) campaign.", callback=campaign_name)] = None,
    simulate: Annotated[Path | None, typer.Option("--simulate", parser=a_path, metavar="<path>",
                                                  help="With --html: add the placement policies' evaluation on this "
                                                       "workload file (see podtax simulate).")] = None,
    seeds: Annotated[int | None, typer.Option(min=2, max=1000, help="With --simulate: seeds of the simulation "
                                              "(default 10).")] = None,
) -> int:
    """Compare a campaign's two sides (pod against host, nomad against kubernetes): ratios with confidence
    intervals, verdicts and flags; control-plane campaigns also get their phase table side by side."""
    if correction not in ("holm", "bh"):
        raise fail(f"unknown correction {correction!r}; use holm or bh", code=2)
    if seeds is not None and simulate is None:
        raise fail("--seeds is the simulation's: give --simulate WORKLOAD (and --html FILE) too, or drop --seeds",
                   code=2)
    if simulate is not None and html is None:
        raise fail("--simulate adds a section to the HTML report: give --html FILE too", code=2)
    if compare is not None and compare == campaign:  # a campaign against itself: nothing to compare
        raise fail(f"--compare {compare} names the report's own campaign: give the campaign to compare it with "
                   f"(e.g. the one before an upgrade)", code=2)
    if compare is not None and html is None:  # else the plain report, with no comparison and no word of it
        raise fail(f"--compare adds a section to the HTML report: give --html FILE too (or run `podtax compare "
                   f"{compare} {campaign}`)", code=2)
    if db is not None and api is not None:
        raise fail("--db reads the file and asks no analyzer: drop --api or --db", code=2)
    if as_json and all_metrics:
        raise fail("--all-metrics is for the terminal report: --json always has every metric (each cell's "
                   "`primary` says which is the headline); drop --all-metrics", code=2)
    if html is not None:
        if db is not None:
            raise fail("--html is made by the analyzer's HTTP API; drop --db", code=2)
        if as_json:
            raise fail("--json prints the report and --html writes its HTML page: give one of them (run twice "
                       "for both)", code=2)
        if all_metrics:
            raise fail("--all-metrics is for the terminal report: the HTML page shows every metric in its full "
                       "table; drop --all-metrics", code=2)
        if simulate is not None and (problem := not_a_file(simulate)):  # before the analyzer renders the page
            raise fail(f"--simulate {simulate}: {problem}; give the workload file (see podtax simulate --help)", 2)
        return _write_html(html, campaign, api, threshold, correction, compare, simulate, seeds or 10)
    data = (_from_db(db, campaign, threshold, correction) if db is not None
            else _from_api(api_url(api), campaign, threshold, correction))
    mark_primary(data.get("cells", []))
    phases = None
    if has_control_plane(data):  # volume-churn, pod-startup: the phase table side by side
        phases = (phases_from_db(db, campaign, threshold, correction) if db is not None
                  else phases_from_api(api_url(api), campaign, threshold, correction))
    if as_json:
        typer.echo(json.dumps({**data, "phase_table": phases} if phases else data, indent=2, ensure_ascii=False))
    else:
        print_report(data, all_metrics=all_metrics)
        if phases:
            print_phase_table(report_console(), phases, data.get("params_labels"))
    return 0


def register(app: typer.Typer) -> None:
    app.command()(report)
