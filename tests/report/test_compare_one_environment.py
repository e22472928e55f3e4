"""`podtax compare` of campaigns whose cells have one environment (pod-startup runs on kubernetes only,
as examples/campaigns/pod-startup.yaml and the demo's report tell users to compare before/after): it said
"inconclusive", base and new "—" and "the pod/host ratio is withheld (see its flags)" with no flags.
It now compares that environment's medians, NEW/BASE with a 95% CI; campaigns that ran different
environments are "not comparable", said plainly. Real events in a real DuckDB file, the real analyzer
app and the real CLI."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fastapi.testclient import TestClient
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 1, 6, 8, tzinfo=UTC)
STARTUP = ("pod-startup", {"count": 5, "concurrency": 5}, "ready_p50_ms", "ms", False)
SYSBENCH = ("sysbench-cpu", {"threads": 1}, "events_per_second", "events/s", True)


def _events(campaign: str, env: str, values: np.ndarray, what=STARTUP, day: int = 0) -> list[events.Envelope]:
    test, params, metric, unit, hib = what
    out = []
    for i, value in enumerate(values):
        run = events.RunSpec(run_id=f"{campaign}-{i}", campaign=campaign, node="node-1", env=env, test=test,
                             params=params, cluster="local", attempt=1, timeout_s=600)
        start = T0 + timedelta(days=day, minutes=2 * i)
        res = events.Result(run=run, tool="podtax", tool_version="1", parser_version="1",
                            metrics=[events.Metric(name=metric, value=float(value), unit=unit, higher_is_better=hib)],
                            started_at=start, ended_at=start + timedelta(seconds=10))
        out.append(events.result(res, "test"))
    return out


RNG = np.random.default_rng(7)
BEFORE = RNG.normal(1000, 10, 8)
CASES = {
    # pod start 20% faster after: a duration, so NEW/BASE 0.8 is an improvement
    "faster": (("kubernetes", BEFORE), ("kubernetes", RNG.normal(800, 8, 8)), "improved"),
    "slower": (("kubernetes", BEFORE), ("kubernetes", RNG.normal(1300, 10, 8)), "worsened"),
    "same": (("kubernetes", BEFORE), ("kubernetes", BEFORE * 1.0005), "no detectable difference"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("cmp1") / "podtax.duckdb")
    for k, (name, (base, new, _)) in enumerate(CASES.items()):  # a day apart: runs that overlap are flagged
        s.write_batch(_events(f"{name}-a", *base, day=2 * k) + _events(f"{name}-b", *new, day=2 * k + 1))
    # the same sysbench cell, host only in one campaign and pod only in the other
    s.write_batch(_events("host-only", "host", BEFORE, SYSBENCH, day=10)
                  + _events("pod-only", "kubernetes", BEFORE, SYSBENCH, day=11))
    yield s
    s.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_one_environment_cell_compares_its_medians(store, name):
    (_, base), (_, new), verdict = CASES[name]
    got = TestClient(create_app(store)).get("/api/compare", params={"base": f"{name}-a", "new": f"{name}-b"})
    (c,) = got.json()["cells"]
    assert c["compared"] == "kubernetes median (ms)" and c["verdict"] == verdict, c["sentence"]
    assert c["base_value"] == pytest.approx(np.median(base)) and c["new_value"] == pytest.approx(np.median(new))
    assert c["change"] == pytest.approx(np.median(new) / np.median(base))
    assert c["change_ci_low"] <= c["change"] <= c["change_ci_high"] and c["p_adjusted"] is not None
    assert c["sentence"].startswith(f"{verdict.capitalize()}: kubernetes median (ms) ")
    assert "withheld" not in c["sentence"] and "ratio" not in c["sentence"]


@pytest.mark.parametrize("path", ["/api/compare?base=faster-a&new=faster-a", "/report/faster-a?compare=faster-a"])
def test_a_campaign_compared_with_itself_is_refused_with_the_fix(store, path):
    """compare_campaigns(X, X) raised a ValueError in its unit check (one campaign's units unpacked as two): a 500."""
    got = TestClient(create_app(store), raise_server_exceptions=False).get(path)
    assert got.status_code == 422, got.text
    assert got.json()["detail"] == "base and new are both 'faster-a': name two different campaigns"


def test_campaigns_that_ran_different_environments_are_not_comparable(store):
    got = TestClient(create_app(store)).get("/api/compare", params={"base": "host-only", "new": "pod-only"})
    (c,) = got.json()["cells"]
    assert c["verdict"] == "not comparable" and c["change"] is None
    assert c["sentence"] == ("Not comparable: host-only ran host and pod-only ran kubernetes, so they share no "
                             "pod/host ratio; run both on the same environments.")


def test_the_cli_says_what_it_compares(store, capsys):
    with serve(create_app(store)) as url:
        assert main(["compare", "faster-a", "faster-b", "--api", url]) == 0
        assert main(["compare", "host-only", "pod-only", "--api", url]) == 0
    out = capsys.readouterr().out
    assert "kubernetes median (ms)" in out and "improved" in out and "not comparable" in out
    assert "withheld" not in out and "see its flags" not in out
