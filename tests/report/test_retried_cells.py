"""A run whose calls were refused (429, 5xx) and sent again (the timeline parser's run flag RETRIED) was flagged in
`podtax results` only: the analyzer's cells, `podtax report`, compare and the exports said nothing of it (review hR
F1). A consumer pod's create sent again is not re-timed: consumer_running holds the wait, an upper bound as
WATCH_GAP's, yet the cells showed it as exact. Now the parser names the figures such objects decide and the cell
gets RETRIED, its upper bound and the ≤ mark; a run whose objects were only re-timed (exact, timed from the attempt
that succeeded) gets the flag and a sentence, no bound. Synthetic volume-churn timelines through the real
derive/parser into a real DuckDB file, served by the real analyzer app, read by the real CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from podtax import events
from podtax.parsers import timeline as parser

from tests.report.conftest import cli_output, exported_comparisons, json_cells, served_campaigns, timeline_run
from tests.report.test_lower_bound_verdicts import PARAMS, RUNS, _timeline

HELD = "create consumer: 429 Too Many Requests (timed from the first attempt: its phases hold the wait)"
# campaign -> the kubernetes runs (of 6, k-th slowest from 0) that were retried
CAMPAIGNS = {"held": (3, 4, 5), "retimed": (0, 1)}


def _retried(text: str, campaign: str) -> str:
    """``text`` with a consumer pod per claim (no retry for another ``campaign``); "held": every consumer pod's
    create was sent again after a 429 (1 s in consumer_running); "retimed": the first claim's create was sent again
    2 s after its first attempt."""
    lines = [json.loads(line) for line in text.splitlines()]
    objs = [x for x in lines if x["kind"] == "object"]
    for x in objs:
        x["t"]["consumer_running"] = x["t"]["bound"] + (1.1 if campaign == "held" else 0.1)
    if campaign == "held":
        lines[-1]["retried"] = {x["name"]: HELD for x in objs}
    elif campaign == "retimed":
        objs[0]["t"]["first_request_sent"] = objs[0]["t"]["request_sent"] - 2.0
        lines[-1]["retried"] = {objs[0]["name"]: "create: 429 Too Many Requests"}
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def _events(campaign: str, month: int) -> list[events.Envelope]:
    out: list[events.Envelope] = []
    for seq in range(2 * RUNS):
        backend, k = ("kubernetes", "nomad")[seq % 2], seq // 2
        run = events.RunSpec(run_id=f"{campaign}-{backend}-{k}", campaign=campaign, node="node-1", env=backend,
                             test="volume-churn", params=PARAMS, sequence=seq)
        text = _timeline(backend, (15.0 if backend == "kubernetes" else 0.1) * (1 + 0.01 * k), None, None, False)
        if backend == "kubernetes":
            text = _retried(text, campaign if k in CAMPAIGNS[campaign] else "")
        started = datetime(2026, month, 1, 2, tzinfo=UTC) + timedelta(minutes=2 * seq)
        out += timeline_run(run, text, started, 40)
    return out


url = served_campaigns("retried", CAMPAIGNS, _events)


def test_the_parser_names_the_figures_a_held_retry_decides() -> None:
    flags = parser.parse(_retried(_timeline("kubernetes", 15.0, None, None, False), "held"), "volume-churn").flags
    held = next(f for f in flags if f.startswith("RETRIED: "))
    named = held.split(";")[0].removeprefix("RETRIED: ").split(", ")
    assert "consumer_running_p50_ms" in named and "consumer_running_makespan_s" in named, held
    assert not any(m.startswith(("provisioned", "bound", "accepted")) for m in named), held  # not held: exact


def test_a_cell_resting_on_held_retries_is_an_upper_bound(url: str, tmp_path: Any) -> None:
    cells = json_cells("report", "held", "--api", url)
    c = cells["consumer_running_p50_ms"]
    assert "RETRIED" in c["flags"] and c["host_upper_bound"], c  # before: flags [], exact
    reason = c["flag_details"]["RETRIED"]
    assert "3 of 6 kubernetes runs" in reason and "upper bounds" in reason and "the median rests on them" in reason, \
        reason
    p = cells["provisioned_p50_ms"]  # the same runs, a phase the consumer pod's create did not hold: exact
    assert "RETRIED" in p["flags"] and not p["host_upper_bound"] and "upper bounds" not in \
        p["flag_details"]["RETRIED"], p
    text = cli_output("report", "held", "--all-metrics", "--api", url)
    assert "RETRIED" in text and "≤ " in text and "calls refused (429 Too Many Requests, a 5xx)" in text, text
    rows = exported_comparisons("held", url, tmp_path / "csv")
    assert rows["consumer_running_p50_ms"]["host_upper_bound"] == "true", rows["consumer_running_p50_ms"]
    assert rows["provisioned_p50_ms"]["host_upper_bound"] == "false"


def test_a_run_of_re_timed_objects_is_said_not_bounded(url: str) -> None:
    cells = json_cells("report", "retimed", "--api", url)
    c = cells["provisioned_p50_ms"]
    assert "RETRIED" in c["flags"] and not c["host_upper_bound"], c
    reason = c["flag_details"]["RETRIED"]
    assert reason.startswith("Retried: in 2 of 6 kubernetes runs") and "timed from the attempt that succeeded" in \
        reason and "upper bound" not in reason, reason
    assert "RETRIED" in cells["provisioned_makespan_s"]["flags"]
