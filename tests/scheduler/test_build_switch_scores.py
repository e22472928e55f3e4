"""The scheduler reads the score of a node that switched tool builds cleanly as any other (the analyzer's
build_switch.py): the newest build's runs alone, not CONFOUNDED, so it is ranked again; the minimum-runs rules apply
to the runs kept (3 runs: no interval, shrunk toward the group's median, a noise band); a newest build of fewer than
3 runs (build_switch.MIN_KEPT) is a trial, not a switch: CONFOUNDED, ignored.

The analyzer's real node_scores over a real DuckDB file, each score put into the scheduler's ScoreStore as the KV
watch gets it (its JSON, with the new left_out field), and the real BenchmarkScore plugin on arm64 nodes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from podtax import events, subjects
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store
from podtax_scheduler.model import PodInfo
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import BenchmarkScore

from tests.scheduler.sched_objects import cluster, pod, with_uid


def _result(i: int, node: str, arch: str, value: float, start: datetime) -> events.ResultV1:
    run = events.RunSpec(run_id=f"{node}-r{i}", campaign="c", node=node, env="kubernetes", test="sysbench-cpu",
                         params={"threads": 1})
    at = start + timedelta(minutes=i)
    return events.result(events.Result(
        run=run, tool="sysbench", tool_version="1.0.20", parser_version="1", started_at=at,
        ended_at=at + timedelta(seconds=10), provenance=events.Provenance(tool_arch=arch),
        metrics=[events.Metric(name="events_per_second", value=value + i % 3, unit="events/s",
                               higher_is_better=True)]), "test")


def test_a_node_that_switched_builds_cleanly_is_ranked_again(tmp_path: Path) -> None:
    """pi ran the armhf sysbench 5 times (500 events/s), then the arm64 one 8 times (1000); pj the arm64 one 8 times
    (900); pl the armhf one 10 times, then the arm64 one 3 times (1000); pm the armhf one 10 times, then the arm64 one
    twice. pi, pj and pl are ranked (before 02c72e1f, pi and pl were CONFOUNDED and ignored): pi scores 100 and pj
    less; pl's 3 runs give no interval (its speed counts 3/(3+3), and a noise band below it), so it sets no reference
    above pi's bound and scores 100 within that noise. pm's 2 arm64 runs are too few to replace its 10 (MIN_KEPT):
    CONFOUNDED, ignored (before, its score was those 2 runs, used)."""
    start = datetime.now(UTC) - timedelta(hours=3)
    results = ([_result(i, "pi", "arm" if i < 5 else "aarch64", 500.0 if i < 5 else 1000.0, start) for i in range(13)]
               + [_result(i, "pj", "aarch64", 900.0, start) for i in range(8)]
               + [_result(i, "pl", "arm" if i < 10 else "aarch64", 500.0 if i < 10 else 1000.0, start)
                  for i in range(13)]
               + [_result(i, "pm", "arm" if i < 10 else "aarch64", 500.0 if i < 10 else 1000.0, start)
                  for i in range(12)])
    db = Store(tmp_path / "podtax.duckdb")
    try:
        db.write_batch(results)
        published = [s for s in node_scores(db.cursor()) if s.metric == "events_per_second"]
    finally:
        db.close()
    store = ScoreStore("local", "kubernetes")
    for s in published:
        key = subjects.score_key(s.cluster, s.env, s.node, s.test, s.metric, s.params_key)
        assert store.put(key, s.model_dump_json())  # as the KV watch reads it
    read = store.groups[("sysbench-cpu", "events_per_second", "threads=1")]
    assert {n: (s.n, s.flags, s.tool_archs, s.ci_low is None) for n, s in read.items()} == {
        "pi": (8, (), ("aarch64",), False), "pj": (8, (), ("aarch64",), False), "pl": (3, (), ("aarch64",), True),
        "pm": (12, ("CONFOUNDED",), ("aarch64", "arm"), False)}
    state = cluster({n: {"kubernetes.io/arch": "arm64"} for n in ("pi", "pj", "pl", "pm")}, [])
    p = PodInfo.from_dict(with_uid(pod("p")))
    idx = state.feasible(p)
    cycle: dict[str, Any] = {}
    out = BenchmarkScore(store, 7 * 86400.0).score(p, state, idx, cycle)
    got = {str(state.names[i]): float(v) for i, v in zip(idx, out, strict=True)}
    assert (cycle["benchmark"]["covered"], cycle["benchmark"]["flagged"]) == (3, 1), cycle
    assert cycle["benchmark"]["flagged_names"] == {"pm": ("CONFOUNDED",)}, cycle
    assert "warning" not in cycle["benchmark"], cycle
    assert got["pi"] == got["pl"] == 100.0 and got["pj"] < 70.0, got  # pj ~10% slower, shrunk toward the median
