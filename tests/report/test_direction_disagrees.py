"""Runs of one metric that disagree on whether higher is better (a producer that changed it between versions): the
store keeps bool_or of the runs' higher_is_better, so host runs saying "higher" and pod runs "lower" read as a
throughput, and a pod 10% lower read "pod 10% slower", a direction that half the runs deny. Such a cell is now
CONFOUNDED, naming what each side's runs said, with no ratio or verdict; `podtax compare` of two campaigns whose runs
disagree (each consistent) does not compare them either. Real Result events in a real DuckDB file, the real analyzer
app and the real CLI (report --json)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from analysis_synth import metrics_event
from podtax_analyzer.api import create_app
from podtax_analyzer.campaign_compare import compare_campaigns
from podtax_analyzer.store import Store

from tests.report.conftest import json_cells, serve

T0 = datetime(2026, 11, 4, 8, tzinfo=UTC)
ORDER = (0, 5, 2, 7, 1, 6, 3, 4, 9, 8)  # no trend
# campaign: higher_is_better of (host runs, pod runs); "split": the pod's first half says one, the rest the other
CASES = {"agree": (True, True), "disagree": (True, False), "split": (True, None), "lower": (False, False)}


def _events(campaign: str, day: int) -> list:
    host_hib, pod_hib = CASES[campaign]
    out = []
    for slot, (env, hib, mid) in enumerate((("host", host_hib, 1000.0), ("kubernetes", pod_hib, 900.0))):
        for i, k in enumerate(ORDER):
            said = hib if hib is not None else i < 5
            out.append(metrics_event(f"{campaign}-{env}-{i}", campaign, "node-1", env,
                                     T0 + timedelta(days=day, minutes=10 * i + 5 * slot),
                                     [("events_per_second", mid + k, "events/s", said)]))
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("hib") / "podtax.duckdb")
    for day, name in enumerate(CASES):
        s.write_batch(_events(name, day))
    yield s
    s.close()


def _cell(url: str, name: str) -> dict:
    return json_cells("report", name, "--api", url)["events_per_second"]


def test_sides_disagreeing_on_the_direction_get_no_verdict(store):
    with serve(create_app(store)) as url:
        for name, said in (("disagree", "host runs said higher and pod runs said lower"),
                           ("split", "host runs said higher and pod runs said lower or higher")):
            cell = _cell(url, name)
            assert cell["flags"] == ["CONFOUNDED"] and cell["ratio"] is None, (name, cell)
            assert cell["verdict"] == "inconclusive" and "% slower" not in cell["sentence"], cell
            assert said in cell["flag_details"]["CONFOUNDED"], cell["flag_details"]


def test_runs_that_agree_keep_their_verdict(store):
    with serve(create_app(store)) as url:
        assert _cell(url, "agree")["verdict"] == "slower"
        assert _cell(url, "lower")["verdict"] == "faster"  # 10% lower, lower is better


def test_compare_across_campaigns_that_disagree_is_not_made(store):
    (row,) = [c for c in compare_campaigns(store.cursor(), "agree", "lower").cells if c.metric == "events_per_second"]
    assert row.verdict == "not comparable" and row.diff is None and row.p_value is None, row
    assert "NEW:CONFOUNDED" in row.flags and "higher is better in agree" in row.sentence, row.sentence


def test_the_api_schema_says_what_new_confounded_means(store):
    """The schema of /api/compare's flags (its docs) named only the unit case of NEW:CONFOUNDED (review hR 7)."""
    schema = create_app(store).openapi()["components"]["schemas"]["CellChange"]["properties"]["flags"]
    assert "NEW:CONFOUNDED" in schema["description"] and "whether higher is better" in schema["description"]
