"""`podtax results` (a table of stored results), `podtax reparse` (re-derive them) and `podtax imports-twice`
(imported runs stored twice, taken once)."""

from __future__ import annotations

import json
from typing import Annotated

import httpx
import typer

from podtax import templates
from podtax.cli import cards
from podtax.cli.common import (
    AGAIN,
    api_headers,
    api_json,
    api_url,
    campaign_name,
    console,
    fail,
    node_name,
    unreachable,
    wide_console,
)
from podtax.event_payloads import printable, printable_tree
from podtax.imports_counted import counted
from podtax.param_labels import label, params_labels

REPARSE_AGAIN = ("the reparse may not have finished: run podtax reparse again once it answers (it derives the same "
                 "results from the stored logs again: nothing is lost or doubled)")


def _get(path: str, params: dict[str, str | int | None] | None = None, method: str = "GET",
         again: str = AGAIN) -> object:
    return answer(ask(path, params, method, again), method, path)


def ask(path: str, params: dict[str, str | int | None] | None = None, method: str = "GET",
        again: str = AGAIN) -> httpx.Response:
    """The analyzer's answer to `method` `path` (params None left out); not answering: one line, exit 1."""
    url = api_url().rstrip("/") + path
    try:
        return httpx.request(method, url, params={k: v for k, v in (params or {}).items() if v is not None},
                             headers=api_headers(api_url()), timeout=300)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise unreachable(api_url(), exc, again=again) from None


def detail(resp: httpx.Response) -> object:
    """Why the analyzer refused: its `detail`, else the start of its text."""
    try:
        return resp.json().get("detail")
    except (ValueError, AttributeError):
        return resp.text[:500]


def answer(resp: httpx.Response, method: str, path: str) -> object:
    """The JSON of an answer; a refusal (>= 400): one line, exit 1."""
    if resp.status_code >= 400:
        raise fail(f"{method} {path}: {resp.status_code} {detail(resp)}")
    return api_json(resp, api_url())


MAX_TEXTS = 10  # distinct flag texts printed under the table


def _known(campaign: str | None) -> None:
    """Nothing found for `campaign`: an unknown one is said so (exit 1), as report, export and compare do."""
    if campaign and campaign not in {c["name"] for c in _get("/api/campaigns")}:  # type: ignore[union-attr]
        raise fail(f"unknown campaign {campaign!r} (the analyzer at {api_url()} has no run of it)")


def flag_names(flags: list[str]) -> list[str]:
    """The names of a run's flags ('PARAM_MISMATCH: bs echoed as 64k, requested 4k' -> 'PARAM_MISMATCH')."""
    return list(dict.fromkeys(f.split(":", 1)[0].strip() for f in flags))


def results(
    campaign: Annotated[str | None, typer.Option(help="Only this campaign.", callback=campaign_name)] = None,
    node: Annotated[str | None, typer.Option(help="Only this node.", callback=node_name)] = None,
    limit: Annotated[int, typer.Option(min=1, max=100_000, help="At most this many runs (the analyzer's API serves "
                                                                 "up to 100000).")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON (every metric).")] = False,
) -> int:
    """Show stored results: one row per run with its primary figures."""
    rows = _get("/api/results", {"campaign": campaign, "node": node, "limit": limit})
    assert isinstance(rows, list)
    if as_json:
        print(json.dumps(rows, indent=1))
        return 0
    if not rows:
        _known(campaign)
        console.print("no results yet" + (f" for campaign {campaign}" if campaign else "")
                      + (f" on node {node}" if node else ""))
        return 0
    title = f"{len(rows)} results" + (f" — campaign {campaign}" if campaign else "")
    columns = [("node", "left"), ("env", "left"), ("test params", "left"), ("tool", "left"), ("metric", "left"),
               ("value", "right"), ("flags", "left")]
    if not campaign:  # else the title names it: 80 columns held no table of nine
        columns.insert(0, ("campaign", "left"))
    cells = []
    shown = printable_tree(rows)  # names from the bus: never a terminal's control sequence (Text: never markup)
    labels = params_labels((r["test"], templates.params_key(r["params"])) for r in shown)  # as every label
    for r in shown:
        first = r["metrics"][0] if r["metrics"] else {"name": "-", "value": float("nan"), "unit": ""}
        params = templates.params_key(r["params"])  # as the report and the scheduler write them (reverse=true)
        m = next((m for m in r["metrics"] if templates.is_primary_metric(r["test"], params, m["name"])), first)
        tool = f"{r['tool'] or ''} {r['tool_version'] or ''}".strip()
        what = f"{r['test']} {label(labels, r['test'], params)}".strip()
        cells.append([*([] if campaign else [r["campaign"]]), r["node"], r["env"], what,
                      tool, m["name"], f"{m['value']:,.2f} {m['unit']}", " ".join(flag_names(r.get("flags") or []))])
    out = wide_console()
    out.print(cards.fitted(out, title, columns, cells, named_by=2, figures=(len(columns) - 2,), light=True))
    flagged = [r for r in rows if r.get("flags")]
    if flagged:  # the table has the names; what they say, each distinct text once, wrapped at the console's width
        texts = list(dict.fromkeys(f for r in flagged for f in r["flags"]))
        for text in texts[:MAX_TEXTS]:
            out.print(cards.card(f"- {printable(text)}", [], out.width), soft_wrap=True)
        more = f" ({len(texts) - MAX_TEXTS} more texts: see --json)" if len(texts) > MAX_TEXTS else ""
        out.print(f"{len(flagged)} of {len(rows)} runs carry flags{more}; `podtax report` says what they do "
                  "to their cells", highlight=False)
    return 0


def reparse(campaign: Annotated[str | None, typer.Option(help="Only this campaign.", callback=campaign_name)]
            = None) -> int:
    """Re-derive results from the stored raw logs with today's parsers (no duplicates)."""
    counts = _get("/api/reparse", {"campaign": campaign}, method="POST", again=REPARSE_AGAIN)
    assert isinstance(counts, dict)
    alone = counts.get("provenance") or 0  # an analyzer before it does not count them
    also = (f" ({alone} only in provenance: the tool's build, version or architecture, or the pod's limits)"
            if alone else "")
    console.print(f"reparsed {counts['logs']} logs: {counts['results']} results, {counts['failures']} failures, "
                  f"{counts['changed']} changed{also}")
    return 0


def imports_twice(campaign: Annotated[str | None, typer.Option(help="Only this campaign.", callback=campaign_name)]
                  = None,
                  apply: Annotated[bool, typer.Option("--apply", help="Take each once: delete the copies' rows (the "
                                                                       "kept runs hold the same logs). Without it, "
                                                                       "only list them.")] = False) -> int:
    """Imported runs the database holds twice (an older podtax spelled the node otherwise, or stored the same logs
    imported again under other file names; or two runs of one manifest logged the same text at one start: check
    both files before --apply): list them with both files, or take each once with --apply."""
    rows = _get("/api/imports/twice", {"campaign": campaign}, method="POST" if apply else "GET")
    assert isinstance(rows, list)
    if not rows:
        _known(campaign)  # a mistyped name is no clean campaign
        console.print("no imported run is stored twice" + (f" in campaign {printable(campaign)}" if campaign else ""),
                      highlight=False)
        return 0
    for r in rows:
        kept = (f"file {printable(r['kept_imported_from'])}" if r.get("kept_imported_from")
                else "kept file: the analyzer is too old to say")  # one before ce6e560d sends no kept file
        console.print(f"{printable(r['campaign'])} {printable(r['env'])}: run {printable(r['run_id'])} (node "
                      f"{printable(r['node'])}, file {printable(r['imported_from'])}) is run "
                      f"{printable(r['kept_run_id'])} (node {printable(r['kept_node'])}, {kept}), the same "
                      "capture", highlight=False, markup=False)
    if apply:
        console.print(f"took {len(rows)} imported run(s) once: their copies' rows are deleted", highlight=False)
        if moved := [r for r in rows if r.get("moved")]:
            again = ", ".join(f"`podtax reparse --campaign {printable(c)}`" for c in sorted({r["campaign"]
                                                                                           for r in moved}))
            console.print(f"{len(moved)} kept run(s) took their copy's outcome (the kept one had none or a failure): "
                          "it carries the metric names and flags of the parser that stored it, maybe an older "
                          f"podtax's; {again} derives it again from the log", highlight=False, markup=False)
    else:
        console.print(f"{len(rows)} imported run(s) are stored twice and {counted(rows)}; nothing changed: "
                      "`podtax imports-twice --apply` takes each once (the copy kept: the one spelled in "
                      "lowercase, the Kubernetes node's name, else the first stored); two runs of one manifest that "
                      "logged the same text at one start are listed too: check both files before --apply",
                      highlight=False, markup=False)
    return 0


def register(app: typer.Typer) -> None:
    app.command()(results)
    app.command()(reparse)
    app.command("imports-twice")(imports_twice)
