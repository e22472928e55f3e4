"""A node that switched tool builds cleanly is scored by the build it runs now (build_switch.py).

Before, a score counted every run of its node, test and parameters ever stored, so a node whose sysbench was replaced
once (the 32-bit armhf build by the arm64 one, or 1.0.18 by 1.0.20) was CONFOUNDED for good, and the scheduler
ignored it. Now, when every run of the older builds ended before the first run of the newest, the score counts the
newest build's runs alone and says what it left out (NodeScore.left_out); builds that interleave stay CONFOUNDED; no
run is deleted. A newest build of fewer than 3 runs (MIN_KEPT) is a trial, not a switch, and a run naming no
architecture never makes a build the newest (review r3 of 02c72e1f: one such run, or one 1.0.18 run after 30 of
1.0.20, became the score alone). Through a real DuckDB file (Store.write_batch), node_scores, the service's
incremental ScoreCache (two publications: the older runs, then the newer) and its restore, and `podtax scores`
(main(argv)) over the real API routes. The older build's runs measure 500 events/s, the newer's 1000: the median
says which were counted."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from podtax import events
from podtax.cli import results as results_cli
from podtax.cli.main import main
from podtax_analyzer.api_analysis import router
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

OLD_ARM = ("1.0.20", "arm")  # the 32-bit armhf build
NEW = ("1.0.20", "aarch64")  # the arm64 build
V18 = ("1.0.18", "aarch64")  # an older version of the arm64 build
NO_ARCH = ("1.0.20", None)  # an older wrapper or agent: names no architecture
V18_NO_ARCH = ("1.0.18", None)  # an imported pre-podtax log of the older version
SPEED = {OLD_ARM: 500.0, V18: 500.0, NO_ARCH: 1000.0, NEW: 1000.0, V18_NO_ARCH: 500.0}


def _result(i: int, build: tuple[str, str | None], start: datetime, node: str = "pi") -> events.ResultV1:
    version, arch = build
    run = events.RunSpec(run_id=f"{node}-r{i}", campaign="c", node=node, env="kubernetes", test="sysbench-cpu",
                         params={"threads": 1})
    at = start + timedelta(minutes=i)
    value = SPEED[build] + i % 3  # a little noise
    return events.result(events.Result(
        run=run, tool="sysbench", tool_version=version, parser_version="1", started_at=at,
        ended_at=at + timedelta(seconds=10), provenance=events.Provenance(tool_arch=arch),
        metrics=[events.Metric(name="events_per_second", value=value, unit="events/s", higher_is_better=True)]),
        "test")


# (history: the builds of the node's runs in time order; n, median, flags, tool_archs of the score; what it left out:
# builds, runs; the kept build's first run's index)
CASES = {
    "armhf-then-arm64": ([OLD_ARM] * 5 + [NEW] * 8, 8, 1001.0, [], ["aarch64"],
                         (["sysbench 1.0.20 (arm)"], 5, 5)),
    "1.0.18-then-1.0.20": ([V18] * 5 + [NEW] * 8, 8, 1001.0, [], ["aarch64"],
                           (["sysbench 1.0.18 (aarch64)"], 5, 5)),
    "three-builds-then-one": ([V18] * 3 + [OLD_ARM] * 3 + [NEW] * 6, 6, 1001.0, [], ["aarch64"],
                              (["sysbench 1.0.18 (aarch64)", "sysbench 1.0.20 (arm)"], 6, 6)),
    # the minimum-runs rules apply to the runs kept: 3 runs, no interval (the scheduler then trusts it little)
    "switch-leaves-3-runs": ([OLD_ARM] * 10 + [NEW] * 3, 3, 1001.0, [], ["aarch64"],
                             (["sysbench 1.0.20 (arm)"], 10, 10)),
    # fewer than MIN_KEPT runs of the newest build is a trial of another binary, not a switch: every run, CONFOUNDED
    # (before: 2 runs, or the one 1.0.18 run at 500 events/s, replaced the node's score and dropped the rest)
    "switch-leaves-2-runs": ([OLD_ARM] * 10 + [NEW] * 2, 12, 501.0, ["CONFOUNDED"], ["aarch64", "arm"], None),
    "one-trial-run-of-another-version": ([NEW] * 30 + [V18], 31, 1001.0, ["CONFOUNDED"], ["aarch64"], None),
    # a run naming no architecture never makes a build the newest on its own: after the switch, one of the newest
    # build's version is counted with it (before: n=1, tool_archs [], the 45 runs left out)
    "switch-then-a-run-naming-no-arch": ([OLD_ARM] * 5 + [NEW] * 40 + [NO_ARCH], 41, 1001.0, [], ["aarch64"],
                                         (["sysbench 1.0.20 (arm)"], 5, 5)),
    # one of another version after the switch interleaves: every run (before: n=1, the 1.0.18 run alone)
    "switch-then-another-version-naming-no-arch": ([OLD_ARM] * 5 + [NEW] * 8 + [V18_NO_ARCH], 14, 1000.0,
                                                   ["CONFOUNDED", "BIMODAL"], ["aarch64", "arm"], None),
    # runs naming none that ended before the newest build's first run are left out with the older builds
    "no-arch-then-armhf-then-arm64": ([NO_ARCH] * 5 + [OLD_ARM] * 5 + [NEW] * 8, 8, 1001.0, [], ["aarch64"],
                                      (["sysbench 1.0.20", "sysbench 1.0.20 (arm)"], 10, 10)),
    # no run names an architecture: no build is told newest (before: the 1.0.20 runs alone), every run counted
    "versions-naming-no-arch": ([V18_NO_ARCH] * 5 + [NO_ARCH] * 8, 13, 1000.0, ["CONFOUNDED", "BIMODAL"], [], None),
    # builds that interleave are other code's figures mixed: every run, CONFOUNDED, as before
    "alternating": ([OLD_ARM, NEW] * 6, 12, 751.0, ["CONFOUNDED", "BIMODAL"], ["aarch64", "arm"], None),
    "switched-back-once": ([OLD_ARM] * 5 + [NEW] * 6 + [OLD_ARM], 12, 751.0, ["CONFOUNDED", "BIMODAL"],
                           ["aarch64", "arm"], None),
    # an agent that started naming tool_arch is no switch of build (one version, one architecture named)
    "agent-upgrade": ([NO_ARCH] * 5 + [NEW] * 5, 10, 1001.0, [], ["aarch64"], None),
}


def _eps(scores: list[events.NodeScore]) -> dict[str, events.NodeScore]:
    return {s.node: s for s in scores if s.metric == "events_per_second"}


@pytest.mark.parametrize("case", list(CASES))
def test_a_clean_switch_of_tool_build_scores_the_newest_builds_runs(tmp_path: Path, case: str) -> None:
    history, n, median, flags, archs, left = CASES[case]
    start = datetime(2026, 12, 1, 8, tzinfo=UTC)
    results = [_result(i, b, start) for i, b in enumerate(history)]
    switch = max(i for i, b in enumerate(history) if b != history[-1]) + 1 if len(set(history)) > 1 else 0
    store = Store(tmp_path / "podtax.duckdb")
    try:
        cache = ScoreCache()
        store.write_batch(results[:switch])
        cache.update(store, [r.data.run.run_id for r in results[:switch]])
        store.write_batch(results[switch:])
        published = _eps(cache.update(store, [r.data.run.run_id for r in results[switch:]]))
        scores = _eps(node_scores(store.cursor()))
        restored = _eps(ScoreCache().restore(store, []))
        stored = store.cursor().execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        store.close()
    pi = scores["pi"]
    assert (pi.n, pi.median, pi.flags, pi.tool_archs) == (n, median, flags, archs), pi
    assert (pi.ci_low is None) == (n < 6), pi
    assert pi.updated_at == results[-1].data.ended_at
    if left is None:
        assert pi.left_out is None, pi
    else:
        builds, runs, first = left
        assert pi.left_out is not None, pi
        assert (pi.left_out.builds, pi.left_out.runs, pi.left_out.since) == (builds, runs,
                                                                              results[first].data.ended_at)
    assert published == scores == restored  # the service's cache scores alike, incrementally and at a restart
    assert stored == len(history)  # no run deleted


def test_a_run_of_an_older_build_stored_later_makes_the_builds_interleave_again(tmp_path: Path) -> None:
    """The rule is applied at each scoring: an armhf run imported later, ended after the arm64 build's first run,
    undoes the clean switch (CONFOUNDED, every run counted), for the service's cache as for node_scores."""
    start = datetime(2026, 12, 1, 8, tzinfo=UTC)
    results = [_result(i, OLD_ARM if i < 5 else NEW, start) for i in range(13)]
    late = _result(20, OLD_ARM, start - timedelta(minutes=12, seconds=30))  # ended between the arm64 runs (7:40)
    store = Store(tmp_path / "podtax.duckdb")
    try:
        cache = ScoreCache()
        store.write_batch(results)
        first = _eps(cache.update(store, [r.data.run.run_id for r in results]))["pi"]
        store.write_batch([late])
        then = _eps(cache.update(store, [late.data.run.run_id]))["pi"]
        assert _eps(node_scores(store.cursor()))["pi"] == then
    finally:
        store.close()
    assert (first.n, first.flags, first.left_out is not None) == (8, [], True)
    assert (then.n, then.flags, then.left_out) == (14, ["CONFOUNDED", "BIMODAL"], None)


@pytest.fixture
def scores_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`podtax scores` over the analyzer's real routes on a real DuckDB file (its HTTP calls routed to FastAPI's
    TestClient: a labelled stand-in for the network), with a Store to write runs into."""
    store = Store(tmp_path / "podtax.duckdb")
    app = FastAPI()
    app.state.store = store
    app.include_router(router)
    tc = TestClient(app)

    def request(method: str, url: str, params: Any = None, timeout: Any = None, headers: Any = None) -> Any:
        return tc.request(method, httpx.URL(url).path, params=params, headers=headers)

    monkeypatch.setattr(results_cli.httpx, "request", request)
    monkeypatch.setenv("PODTAX_API_URL", "http://analyzer.test:8700")
    yield store
    store.close()


def test_podtax_scores_says_what_a_clean_switch_left_out(scores_cli: Store, capsys: pytest.CaptureFixture) -> None:
    """pi switched from the armhf build to the arm64 one (5 runs, then 8): `podtax scores` shows 8 runs, used by the
    scheduler, and says since when and which runs were left out; pk's builds alternate: ignored, CONFOUNDED; pl
    switched leaving 3 runs (MIN_KEPT): used with no interval, and says what was left out; pm ran the arm64 build
    twice after 10 armhf runs: too few to be a switch, ignored, CONFOUNDED."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)  # fresh: within the scheduler's TTL
    scores_cli.write_batch([_result(i, OLD_ARM if i < 5 else NEW, start) for i in range(13)]
                           + [_result(i, (OLD_ARM, NEW)[i % 2], start, "pk") for i in range(12)]
                           + [_result(i, OLD_ARM if i < 10 else NEW, start, "pl") for i in range(13)]
                           + [_result(i, OLD_ARM if i < 10 else NEW, start, "pm") for i in range(12)])
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
    rows = {r["node"]: r for r in json.loads(capsys.readouterr().out)["scores"]}
    since = (start + timedelta(minutes=5, seconds=10)).strftime("%Y-%m-%d %H:%M:%S")
    assert (rows["pi"]["n"], rows["pi"]["flags"], rows["pi"]["tool_archs"]) == (8, [], ["aarch64"])
    assert rows["pi"]["left_out"]["runs"] == 5 and rows["pi"]["left_out"]["builds"] == ["sysbench 1.0.20 (arm)"]
    assert rows["pi"]["status"] == (f"used; counts only its runs since {since} (a clean switch of tool build): 5 older "
                                    "runs of sysbench 1.0.20 (arm) left out (still stored)"), rows["pi"]
    assert rows["pk"]["status"] == ("ignored: flagged CONFOUNDED/BIMODAL (its runs' tool executables were built for "
                                    "aarch64 + arm)"), rows["pk"]
    assert rows["pk"]["left_out"] is None
    pl_since = (start + timedelta(minutes=10, seconds=10)).strftime("%Y-%m-%d %H:%M:%S")
    assert rows["pl"]["status"].startswith("used, with no interval (3 runs): its median counts 3/(3+3)"), rows["pl"]
    assert rows["pl"]["status"].endswith(f"; counts only its runs since {pl_since} (a clean switch of tool build): "
                                         "10 older runs of sysbench 1.0.20 (arm) left out (still stored)"), rows["pl"]
    assert (rows["pm"]["n"], rows["pm"]["left_out"]) == (12, None), rows["pm"]
    assert rows["pm"]["status"] == ("ignored: flagged CONFOUNDED (its runs' tool executables were built for aarch64 + "
                                    "arm)"), rows["pm"]
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())  # a wrapped cell's lines, joined
    assert "(a clean switch of tool build): 5 older runs of sysbench 1.0.20 (arm) left out (still stored)" in text, text
    assert "2 of 4 node scores are ignored by the scheduler" in text, text
