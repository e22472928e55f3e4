"""OVERLAP (issue 12, item 1, second line of defence): runs whose time spans overlap on one node, on
any side and in any campaign, are flagged, and the flag withholds the cell's verdict."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from podtax import events
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.store import Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def result(run_id: str, campaign: str, env: str, start: datetime, value: float, node: str = "n1",
           seconds: float = 10) -> events.ResultV1:
    run = events.RunSpec(run_id=run_id, campaign=campaign, node=node, env=env,  # type: ignore[arg-type]
                         test="sysbench-cpu", params={"threads": 1, "max_prime": 2000, "events": 100})
    res = events.Result(run=run, tool="sysbench", tool_version="sysbench 1.0.20", parser_version="1",
                        metrics=[events.Metric(name="events_per_second", value=value, unit="events/s",
                                               higher_is_better=True)],
                        started_at=start, ended_at=start + timedelta(seconds=seconds))
    return events.result(res, "test", event_id=f"{run_id}.result")


def campaign_runs(campaign: str, node: str = "n1") -> list[events.ResultV1]:
    """8 host and 8 pod runs, one after another (10 s each, 20 s apart), pod 3% slower."""
    rng = np.random.default_rng(1)
    out = []
    for i in range(16):
        env = "host" if i % 2 == 0 else "kubernetes"
        value = 1000.0 * (1.0 if env == "host" else 0.97) * (1 + rng.normal(0, 0.002))
        out.append(result(f"{campaign}-{node}-{i}", campaign, env, T0 + timedelta(seconds=20 * i), value, node))
    return out


def flags_of(store: Store) -> dict[str, list[str]]:
    return {r: [f for f in flags if f.startswith("OVERLAP")]
            for r, flags in store.cursor().execute("SELECT run_id, flags FROM runs").fetchall()}


def test_overlapping_runs_of_another_campaign_are_flagged_and_block_the_verdict(tmp_path: Path) -> None:
    store = Store(tmp_path / "podtax.duckdb")
    try:
        # The intruder arrives first; the runs it overlaps arrive later: both sides get the flag.
        intruder = result("intruder", "other", "host", T0 + timedelta(seconds=65), 500.0, seconds=30)
        store.write_batch([intruder])
        assert flags_of(store)["intruder"] == []
        store.write_batch(campaign_runs("clean") + campaign_runs("clean", node="n2"))
        flags = flags_of(store)
        # Spans [65 s, 95 s) overlap runs 3 [60, 70), 4 [80, 90) on n1 (run 5 starts at 100 s).
        assert sorted(r for r, f in flags.items() if f) == ["clean-n1-3", "clean-n1-4", "intruder"]
        assert "2 other runs on node n1" in flags["intruder"][0] and "campaign clean" in flags["intruder"][0]
        assert "run intruder (host, campaign other)" in flags["clean-n1-3"][0]
        report = compare_campaign(store.cursor(), "clean")
        by_node = {c.node: c for c in report.cells}
        assert "OVERLAP" in by_node["n1"].flags and by_node["n1"].verdict == "inconclusive"
        assert "1 host run and 1 pod run overlapped" in by_node["n1"].flag_details["OVERLAP"]
        assert "OVERLAP" not in by_node["n2"].flags and by_node["n2"].verdict == "slower"
        # Redelivering the same events changes nothing (one flag per run, no duplicates).
        store.write_batch([intruder, *campaign_runs("clean")])
        assert flags_of(store) == flags
    finally:
        store.close()


def test_back_to_back_runs_do_not_overlap(tmp_path: Path) -> None:
    store = Store(tmp_path / "podtax.duckdb")
    try:
        a = result("a", "c", "host", T0, 1.0)
        b = result("b", "c", "kubernetes", T0 + timedelta(seconds=10), 1.0)  # starts as a ends
        # a pod time truncated to the second: it "started" 0.7 s before the previous run ended
        c = result("c", "c", "host", T0 + timedelta(seconds=30.5), 1.0)
        d = result("d", "c", "kubernetes", T0 + timedelta(seconds=39.8), 1.0)
        store.write_batch([a, b, c, d])
        assert flags_of(store) == {"a": [], "b": [], "c": [], "d": []}
    finally:
        store.close()
