"""A figure timed after a dropped Kubernetes watch (the timeline parser's run flag WATCH_GAP: end points seen only by
the re-list after the gap, an upper bound) was flagged in `podtax results` only: the analyzer's cells and `podtax
report` said nothing of it. A cell whose metric a run's WATCH_GAP names now carries the cell flag WATCH_GAP, saying
how many of which side's runs, in JSON, the terminal report (flag and legend) and the HTML. Synthetic volume-churn
timelines (2 of 6 kubernetes runs with a claim watch gap their PVs' pv_created were seen after) through the real
derive/parser into a real DuckDB file, served by the real analyzer app, read by the real CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from podtax import events

from tests.report.conftest import serve_batches, timeline_run
from tests.report.test_lower_bound_marks import _cli
from tests.report.test_lower_bound_verdicts import PARAMS, RUNS, _timeline

# campaign -> the kubernetes runs (of 6, k-th slowest from 0) that had the gap: below the median, or at and above it
CAMPAIGNS = {"gap": (0, 1), "gaptop": (3, 4, 5)}
GAP_RUNS = 2


def _gapped(text: str) -> str:
    """``text`` whose summary says the claim watch was down 1-16 s and a re-list saw every PV's pv_created."""
    lines = [json.loads(line) for line in text.splitlines()]
    late = {x["name"]: ["pv_created"] for x in lines if x["kind"] == "object"}
    lines[-1]["watch_gaps"] = [{"watch": "claim", "start": 1.0, "end": 16.0, "late": late}]
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def _events(campaign: str, month: int) -> list[events.Envelope]:
    out: list[events.Envelope] = []
    for seq in range(2 * RUNS):
        backend, k = ("kubernetes", "nomad")[seq % 2], seq // 2
        seconds = 15.0 if backend == "kubernetes" else 0.1
        run = events.RunSpec(run_id=f"{campaign}-{backend}-{k}", campaign=campaign, node="node-1", env=backend,
                             test="volume-churn", params=PARAMS, sequence=seq)
        text = _timeline(backend, seconds * (1 + 0.01 * k), None, None, False)
        if backend == "kubernetes" and k in CAMPAIGNS[campaign]:
            text = _gapped(text)
        started = datetime(2026, month, 1, 2, tzinfo=UTC) + timedelta(minutes=2 * seq)
        out += timeline_run(run, text, started, 40)
    return out


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Any:
    batches = (_events(campaign, month) for month, campaign in enumerate(CAMPAIGNS, start=1))
    with serve_batches(tmp_path_factory.mktemp("gap"), batches) as u:
        yield u


def test_a_cell_named_by_watch_gap_is_flagged(url: str, tmp_path: Any) -> None:
    cells = {c["metric"]: c for c in json.loads(_cli("report", "gap", "--json", "--api", url))["cells"]}
    c = cells["provisioned_p50_ms"]
    assert "WATCH_GAP" in c["flags"], c
    reason = c["flag_details"]["WATCH_GAP"]
    assert f"{GAP_RUNS} of 6 kubernetes runs timed provisioned_p50_ms after a dropped watch: upper bounds" in reason
    assert "nomad" not in reason.split(":")[1], reason
    assert "WATCH_GAP" not in cells["accepted_p50_ms"]["flags"], cells["accepted_p50_ms"]  # not named by the flag
    # the gapped runs are the two fastest: a smaller true time cannot move the median, the verdict stands
    assert "they lie below the median" in reason and c["verdict"] == "faster", c

    text = _cli("report", "gap", "--all-metrics", "--api", url)
    assert "WATCH_GAP" in text and "after a dropped Kubernetes watch" in text, text  # the flag and its legend

    _cli("report", "gap", "--html", str(tmp_path / "gap.html"), "--api", url)
    html = (tmp_path / "gap.html").read_text()
    assert "WATCH_GAP" in html and "timed provisioned_p50_ms after a dropped watch" in html


def test_a_median_resting_on_upper_bounds_makes_no_verdict_that_needs_them(url: str) -> None:
    """Kubernetes' median rests on runs timed after a dropped watch (3 of its 6 slowest): it may be faster than
    shown, so "nomad faster" (kubernetes slower) does not stand on it (stats/verdict.py's mirror of LOWER_BOUND)."""
    cells = {c["metric"]: c for c in json.loads(_cli("report", "gaptop", "--json", "--api", url))["cells"]}
    c = cells["provisioned_p50_ms"]
    assert c["verdict"] == "inconclusive", c  # was "faster" (nomad 99% faster)
    assert "the median rests on them" in c["flag_details"]["WATCH_GAP"], c
    assert "kubernetes's provisioned_p50_ms is only an upper bound" in c["sentence"], c["sentence"]
    assert "no verdict that nomad is faster" in c["sentence"], c["sentence"]
    assert cells["accepted_p50_ms"]["verdict"] != "inconclusive", cells["accepted_p50_ms"]  # not named: unbounded
