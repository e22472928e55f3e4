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

GAP_RUNS = 2  # the first GAP_RUNS kubernetes runs had the gap


def _gapped(text: str) -> str:
    """``text`` whose summary says the claim watch was down 1-16 s and a re-list saw every PV's pv_created."""
    lines = [json.loads(line) for line in text.splitlines()]
    late = {x["name"]: ["pv_created"] for x in lines if x["kind"] == "object"}
    lines[-1]["watch_gaps"] = [{"watch": "claim", "start": 1.0, "end": 16.0, "late": late}]
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def _events() -> list[events.Envelope]:
    out: list[events.Envelope] = []
    for seq in range(2 * RUNS):
        backend, k = ("kubernetes", "nomad")[seq % 2], seq // 2
        seconds = 15.0 if backend == "kubernetes" else 0.1
        run = events.RunSpec(run_id=f"gap-{backend}-{k}", campaign="gap", node="node-1", env=backend,
                             test="volume-churn", params=PARAMS, sequence=seq)
        text = _timeline(backend, seconds * (1 + 0.01 * k), None, None, False)
        if backend == "kubernetes" and k < GAP_RUNS:
            text = _gapped(text)
        started = datetime(2026, 1, 1, 2, tzinfo=UTC) + timedelta(minutes=2 * seq)
        out += timeline_run(run, text, started, 40)
    return out


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with serve_batches(tmp_path_factory.mktemp("gap"), [_events()]) as u:
        yield u


def test_a_cell_named_by_watch_gap_is_flagged(url: str, tmp_path: Any) -> None:
    cells = {c["metric"]: c for c in json.loads(_cli("report", "gap", "--json", "--api", url))["cells"]}
    c = cells["provisioned_p50_ms"]
    assert "WATCH_GAP" in c["flags"], c
    reason = c["flag_details"]["WATCH_GAP"]
    assert f"{GAP_RUNS} of 6 kubernetes runs timed provisioned_p50_ms after a dropped watch: upper bounds" in reason
    assert "nomad" not in reason.split(":")[1], reason
    assert "WATCH_GAP" not in cells["accepted_p50_ms"]["flags"], cells["accepted_p50_ms"]  # not named by the flag

    text = _cli("report", "gap", "--all-metrics", "--api", url)
    assert "WATCH_GAP" in text and "after a dropped Kubernetes watch" in text, text  # the flag and its legend

    _cli("report", "gap", "--html", str(tmp_path / "gap.html"), "--api", url)
    html = (tmp_path / "gap.html").read_text()
    assert "WATCH_GAP" in html and "timed provisioned_p50_ms after a dropped watch" in html
