"""A secondary metric whose verdict a flag withholds (audit of Dec 6, planted imports): its note said its own verdict
"(inconclusive) is corrected among secondary metrics", as if the Holm correction had taken it away, when DRIFT had
withheld it; a primary metric withheld by DRIFT was "the headline" that "says inconclusive", with no word of why; and a
metric never tested (sockperf's dropped_messages, 0 on every run) was "corrected among secondary metrics" too. Real
result events in a real DuckDB file, the real analyzer app and the real CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from analysis_synth import metrics_event
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 8, 4, 8, tzinfo=UTC)
JITTER = [0.0, 0.3, -0.2, 0.1, -0.1, 0.2, -0.3, 0.0, 0.4, -0.4]  # percent, no two alike
STEADY = [1 + j / 100 for j in JITTER]
RISING = [1 + (i + j / 10) / 100 for i, j in enumerate(JITTER)]  # +1% a run: DRIFT (Mann-Kendall)


def _campaign(campaign: str, day: int, eps_host: list[float], lat_host: list[float] | None) -> list:
    """sysbench-cpu on node-1, 10 host and 10 pod runs alternating 3 minutes apart: the pod 20% slower
    (events_per_second 800 against 1000, latency_avg 1.25 against 1 ms), host figures scaled by the lists; with
    ``lat_host`` None, latency_avg is 1 ms on every run of both sides."""
    out = []
    for i in range(10):
        for k, (env, eps, lat) in enumerate((("host", 1000 * eps_host[i], (lat_host or STEADY)[i]),
                                             ("kubernetes", 800 * STEADY[i], 1.25 * STEADY[9 - i]))):
            lat = 1.0 if lat_host is None else lat
            out.append(metrics_event(f"{campaign}-{i}-{env}", campaign, "node-1", env,
                                     T0 + timedelta(days=day, minutes=6 * i + 3 * k),
                                     [("events_per_second", eps, "events/s", True), ("latency_avg", lat, "ms", False)],
                                     params={"threads": 1, "max_prime": 10000, "events": 0, "time": 10}))
    return out


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("withheld") / "podtax.duckdb")
    store.write_batch(_campaign("lat-drifts", 0, STEADY, RISING))
    store.write_batch(_campaign("eps-drifts", 1, RISING, STEADY))
    store.write_batch(_campaign("lat-fixed", 2, STEADY, None))
    with serve(create_app(store)) as u:
        yield u
    store.close()


def _cells(url, campaign, capsys):
    assert main(["report", campaign, "--api", url, "--json"]) == 0
    return {c["metric"]: c for c in json.loads(capsys.readouterr().out)["cells"]}


def test_a_secondary_withheld_by_a_flag_says_so(url, capsys):
    cells = _cells(url, "lat-drifts", capsys)
    assert (cells["events_per_second"]["verdict"], cells["events_per_second"]["flags"]) == ("slower", [])
    c = cells["latency_avg"]
    assert c["verdict"] == "inconclusive" and "DRIFT" in c["flags"], c
    assert "corrected among secondary metrics" not in c["sentence"], c["sentence"]
    note = ("Secondary metric: the test's primary metric events_per_second says pod 20.0% slower, which is the "
            "headline; this metric's own verdict is withheld (DRIFT).")
    assert c["warnings"] == [note] and c["sentence"].endswith(note), c["sentence"]


def test_a_withheld_primary_says_why(url, capsys):
    cells = _cells(url, "eps-drifts", capsys)
    head = cells["events_per_second"]
    assert head["verdict"] == "inconclusive" and "DRIFT" in head["flags"], head
    c = cells["latency_avg"]
    assert (c["verdict"], c["flags"]) == ("slower", []), c
    note = ("Secondary metric: the test's primary metric events_per_second says inconclusive (withheld: DRIFT), "
            "which is the headline; this metric's own verdict (slower) is corrected among secondary metrics.")
    assert c["warnings"] == [note], c["warnings"]


def test_an_untested_secondary_says_so(url, capsys):
    c = _cells(url, "lat-fixed", capsys)["latency_avg"]
    assert (c["verdict"], c["p_value"]) == ("no detectable difference", None), c
    note = ("Secondary metric: the test's primary metric events_per_second says pod 20.0% slower, which is the "
            "headline; this metric's own verdict (no detectable difference) was reached without a p-value, so no "
            "correction applies.")
    assert note in c["warnings"], c["warnings"]
