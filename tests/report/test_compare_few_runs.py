"""`podtax compare` of a cell with fewer runs a side than the report's minimum (podtax.flags.MIN_RUNS, the
INSUFFICIENT rule) in either campaign: it printed a tight interval and p = 0.00025 from a bootstrap of the
medians of 2 values (audit: `compare cmp-base cmp-few`, 2 runs a side), while the report gives such a
cell no verdict. It now gives the difference without an interval or p-value, and says why. Real events in
a real DuckDB file, the real analyzer app and the real CLI."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from analysis_synth import result_event
from fastapi.testclient import TestClient
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 2, 3, 8, tzinfo=UTC)
SYSBENCH = ("sysbench-cpu", {"threads": 1}, "events_per_second", "events/s", True)
STARTUP = ("pod-startup", {"count": 5, "concurrency": 5}, "ready_p50_ms", "ms", False)


def _runs(campaign: str, env: str, values: np.ndarray, what: tuple, day: int) -> list[events.Envelope]:
    test, params, metric, unit, hib = what
    out = []
    for i, value in enumerate(values):
        start = T0 + timedelta(days=day, minutes=4 * i + (2 if env == "kubernetes" else 0))  # never overlapping
        out.append(result_event(f"{campaign}-{env}-{i}", campaign, "node-1", env, value, start, test=test,
                                params=params, metric=metric, unit=unit, higher_is_better=hib, tool="podtax",
                                tool_version="1"))
    return out


def _values(n: int, median: float, seed: int) -> np.ndarray:
    return median * (1 + np.random.default_rng(seed).normal(0, 0.003, n))


# name: (BASE runs per env, NEW runs per env, test, interval expected, what the sentence names as too few)
CASES = {
    "new-2-a-side": ({"host": 8, "kubernetes": 8}, {"host": 2, "kubernetes": 2}, SYSBENCH, False,
                     "new-2-a-side-b has 2 host and 2 pod runs"),
    "base-2-a-side": ({"host": 2, "kubernetes": 2}, {"host": 8, "kubernetes": 8}, SYSBENCH, False,
                      "base-2-a-side-a has 2 host and 2 pod runs"),
    "new-pod-5": ({"host": 8, "kubernetes": 8}, {"host": 8, "kubernetes": 5}, SYSBENCH, False,
                  "new-pod-5-b has 8 host and 5 pod runs"),
    "one-env-3": ({"kubernetes": 8}, {"kubernetes": 3}, STARTUP, False, "one-env-3-b has 3 kubernetes runs"),
    "enough": ({"host": 6, "kubernetes": 6}, {"host": 6, "kubernetes": 6}, SYSBENCH, True, None),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("cmpfew") / "podtax.duckdb")
    for k, (name, (base, new, what, _, _)) in enumerate(sorted(CASES.items())):
        for day, (suffix, runs) in enumerate((("a", base), ("b", new))):
            for j, (env, n) in enumerate(runs.items()):  # NEW's pod side 10% slower
                median = 1000.0 * (0.9 if suffix == "b" and env == "kubernetes" else 1.0)
                s.write_batch(_runs(f"{name}-{suffix}", env, _values(n, median, 10 * k + 2 * day + j), what,
                                    day=2 * k + day))
    yield s
    s.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_interval_or_p_value_below_the_reports_minimum(store, name):
    *_, interval, too_few = CASES[name]
    got = TestClient(create_app(store)).get("/api/compare", params={"base": f"{name}-a", "new": f"{name}-b"})
    (c,) = got.json()["cells"]
    assert c["diff"] is not None and c["change"] is not None  # the point figures stay, as the report's ratio
    figures = [c[k] for k in ("diff_ci_low", "diff_ci_high", "change_ci_low", "change_ci_high", "p_value",
                              "p_adjusted")]
    if interval:
        assert None not in figures and c["verdict"] == "worsened", c["sentence"]
        assert "too few runs" not in c["sentence"]
        return
    assert figures == [None] * 6 and c["verdict"] == "inconclusive", c["sentence"]
    assert c["sentence"].startswith(f"Inconclusive (too few runs: {too_few}; at least 6 a side are needed for "
                                    f"an interval, a p-value and a verdict): "), c["sentence"]
    assert "CI" not in c["sentence"] and "p =" not in c["sentence"] and "p <" not in c["sentence"]


def test_the_cli_prints_no_interval_for_too_few_runs(store, capsys):
    with serve(create_app(store)) as url:
        assert main(["compare", "new-2-a-side-a", "new-2-a-side-b", "--api", url]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "node-1" in line and "│" in line)
    assert " to " not in row and "—" in row and "inconclusive" in row, out
    assert "too few runs: new-2-a-side-b has 2 host and 2 pod runs" in " ".join(out.split()), out
