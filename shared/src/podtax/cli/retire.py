"""`podtax retire`: score a node only by its runs since a time (it changed: a new build of the tool that interleaved
with the old, a hardware change, a kernel upgrade), list the nodes so retired, undo it. The older runs stay stored
for reports and comparisons; only the node's scores (podtax scores, /api/scores, the scheduler's) leave them out
(the analyzer's retired.py). `podtax scores` says it on each such node's row (retired_said)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from podtax.cli.common import api_url, cluster_name, console, fail, node_name, warn
from podtax.cli.results import answer, ask, detail
from podtax.event_payloads import printable

PATH = "/api/retired"
DATE_FORMS = "e.g. 2026-11-30 or 2026-11-30T14:00 (UTC unless it names a zone, as 2026-11-30T14:00+01:00)"


def when(value: str | None) -> datetime | None:
    """--before: an ISO 8601 date or time, UTC unless it names a zone, not in the future; else a usage error."""
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(value.strip())
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date or time: give one as {DATE_FORMS}",
                                 param_hint="--before") from None
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    now = datetime.now(UTC)
    if at > now:
        raise typer.BadParameter(f"{value} is in the future (now {now:%Y-%m-%d %H:%M} UTC): runs not made yet cannot "
                                 "be retired; give the time the node changed", param_hint="--before")
    return at


def _day(stamp: str) -> str:
    """A time from /api/retired (ISO 8601 in UTC) as printed: '2026-11-01 05:00:00 UTC'."""
    return stamp[:19].replace("T", " ") + " UTC"


def _ask(params: dict[str, str | None], method: str) -> object:
    """/api/retired as `method`; an analyzer without the route (FastAPI's own 404 'Not Found', an analyzer older than
    `podtax retire`) is one line and exit 1 naming the upgrade; its refusals one line and exit 1, as results._get,
    but a refusal of what the user typed (POST: no run of NODE stored, naming the closest stored; no run of it started
    before DATE; DATE in the future; NODE in two clusters; DELETE: no retired runs of NODE; NODE retired in two
    clusters) one line and exit 2, a usage mistake."""
    resp = ask(PATH, dict(params), method)
    if resp.status_code == 404 and detail(resp) == "Not Found":
        raise fail(f"{method} {PATH}: 404 Not Found: the analyzer at {api_url()} is older than `podtax retire` "
                   f"(it has no {PATH}): upgrade it to this podtax's version")
    if method in ("POST", "DELETE") and resp.status_code in (404, 422) and isinstance(detail(resp), str):
        raise fail(f"{method} {PATH}: {resp.status_code} {printable(detail(resp))}", 2)
    return answer(resp, method, PATH)


def retired_rows() -> list[dict[str, Any]]:
    """GET /api/retired; [] from an analyzer without the route (one before podtax retire: nothing is retired). An
    analyzer that gives no per-score counts (`scores`, older than them) is said once, on stderr."""
    resp = ask(PATH)
    if resp.status_code == 404:
        return []
    rows = answer(resp, "GET", PATH)  # a refusal: one line, exit 1
    rows = rows if isinstance(rows, list) else []
    if any("scores" not in r for r in rows):
        warn(f"the analyzer at {api_url()} gives a retired node's count of runs for the node only (every test), not "
             "each score's: upgrade it to this podtax's version for each score's")
    return rows


def _runs(n: int) -> str:
    return f"{n} {'run' if n == 1 else 'runs'}"


def retired_said(score: dict[str, Any], retired: dict[tuple[str, str], dict[str, Any]]) -> str:
    """What a score of a node whose older runs were retired leaves out, said after its status; "" otherwise: this
    score's count (the retirement's `scores`), else (an older analyzer) the node's, of every test and env."""
    r = retired.get((score["cluster"], score["node"]))
    if r is None:
        return ""
    since, by, on = _day(r["before"]), "retired by the user on", _day(r["retired_at"])
    if "scores" not in r:  # an analyzer older than per-score counts: the node's, not this score's
        node = _runs(r["runs"]).replace(" ", " of the node's ", 1)
        return f"; counts only its runs since {since}: {node} (every test) before {since} {by} {on} (still stored)"
    key = tuple(score[k] for k in ("env", "test", "params_key", "metric"))
    mine = sum(s["runs"] for s in r["scores"] if tuple(s[k] for k in ("env", "test", "params_key", "metric")) == key)
    return (f"; counts only its runs since {since}: {_runs(mine)} of this score before {since} {by} {on} (still "
            f"stored; {_runs(r['runs'])} of the node's, every test)")


def _nothing_retired(row: Any) -> None:
    """An analyzer older than its refusal of a DATE before every run of NODE (its answer lacks `scores`) wrote a
    retirement of no run (a typo, the wrong year): said, with how to remove it, exit 2."""
    if not isinstance(row, dict) or "scores" in row or row.get("runs") != 0:
        return
    node, cluster = printable(str(row.get("node"))), printable(str(row.get("cluster")))
    raise fail(f"POST {PATH}: no run of node {node} (cluster {cluster}) started before {_day(str(row.get('before')))}"
               f", yet the analyzer at {api_url()} (older than this podtax) stored this retirement of none: "
               f"`podtax retire {node} --undo --cluster {cluster}` removes it; give the time the node changed, after "
               "its first run (podtax results lists its runs), and upgrade the analyzer to this podtax's version", 2)


def retire(
    node: Annotated[str | None, typer.Argument(help="The node, as its runs name it.", callback=node_name,
                                               show_default=False)] = None,
    before: Annotated[str | None, typer.Option(help=f"Its runs started before this time count in no score; "
                                                    f"{DATE_FORMS}.", show_default=False)] = None,
    cluster: Annotated[str | None, typer.Option(help="The node's cluster (needed only when two clusters have a node "
                                                     "of that name).", callback=cluster_name)] = None,
    undo: Annotated[bool, typer.Option("--undo", help="Count every run of NODE again.")] = False,
    show: Annotated[bool, typer.Option("--list", help="List the nodes whose older runs are retired.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the retirements as JSON.")] = False,
) -> int:
    """Score NODE only by its runs since --before (it changed: a tool build, its hardware, its kernel); the older
    runs stay stored for reports and comparisons. --list shows the nodes so retired, --undo counts every run again."""
    at = when(before)
    if show and (undo or before is not None):
        raise typer.BadParameter("--list takes neither --before nor --undo", param_hint="--list")
    if not show and node is None:
        raise typer.BadParameter("give NODE and --before DATE (or --undo), or --list", param_hint="'node'")
    if undo and before is not None:
        raise typer.BadParameter("--undo takes no --before (it counts every run of NODE again)", param_hint="--undo")
    if not show and not undo and at is None:
        raise typer.BadParameter(f"give the time from which NODE's runs count, as {DATE_FORMS}",
                                 param_hint="--before")
    if show:
        rows = _ask({"node": node, "cluster": cluster}, "GET")
    elif undo:
        rows = [_ask({"node": node, "cluster": cluster}, "DELETE")]
    else:
        assert at is not None
        rows = [_ask({"node": node, "cluster": cluster, "before": at.isoformat()}, "POST")]
        _nothing_retired(rows[0])
    assert isinstance(rows, list)
    if as_json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        its = f"node {printable(r['node'])} (cluster {printable(r['cluster'])})"
        runs = f"{r['runs']} {'run' if r['runs'] == 1 else 'runs'} started before {_day(r['before'])}"
        if undo:
            said = f"{its}: every run counts again ({runs}, retired on {_day(r['retired_at'])})"
        elif show:
            said = f"{its}: {runs} retired on {_day(r['retired_at'])}"
        else:
            said = (f"{its}: its {runs} count in no score from now on (still stored for reports and comparisons); "
                    f"`podtax retire {printable(r['node'])} --undo --cluster {printable(r['cluster'])}` counts them "
                    "again")
        console.print(said, highlight=False, markup=False)
    if show and not rows:
        console.print("no node has retired runs", highlight=False)
    return 0


def register(app: typer.Typer) -> None:
    app.command()(retire)
