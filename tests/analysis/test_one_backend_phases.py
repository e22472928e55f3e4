"""Metrics of a phase only one backend has (Kubernetes' accepted, bound and deleted; podtax.phases.ABSENT) in the
comparison (audit i, finding 12): they were flagged INSUFFICIENT, "a ratio needs runs on both sides", inviting
runs that can never help, and the summary listed them as excluded for INSUFFICIENT. Now such a cell is "Not
comparable (Nomad has no such phase)" with the reason the phase table gives, and no INSUFFICIENT; a side that
could have the metric but has no runs still is INSUFFICIENT. Timelines go through the real parser into a real
DuckDB file."""

from __future__ import annotations

import pytest
from podtax import phases as ph
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.store import Store
from timeline_synth import run_events

RUNS = 6


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("db") / "podtax.duckdb")
    batch = []
    for seq in range(RUNS):
        for env in ("kubernetes", "nomad"):
            batch += run_events("both", env, "volume-churn", seq * 2 + (env == "nomad"))
        batch += run_events("k8s-only", "kubernetes", "volume-churn", 100 + seq)  # nomad never ran
    s.write_batch(batch)
    yield {c: compare_campaign(s.cursor(), c) for c in ("both", "k8s-only")}
    s.close()


# (campaign, metric): the phase Nomad lacks (None: Nomad has it, its runs are missing)
CASES = [
    ("both", "bound_p50_ms", "bound"),
    ("both", "bound_makespan_s", "bound"),
    ("both", "accepted_p99_ms", "accepted"),
    ("both", "deleted_max_ms", "deleted"),
    ("k8s-only", "bound_p50_ms", "bound"),
    ("k8s-only", "provisioned_p50_ms", None),
    ("k8s-only", "provisioned_makespan_s", None),
]


@pytest.mark.parametrize(("campaign", "metric", "absent"), CASES)
def test_a_phase_nomad_lacks_is_not_too_few_runs(report, campaign, metric, absent):
    c = next(c for c in report[campaign].cells if c.metric == metric)
    summary = next(s for s in report[campaign].summary if s.metric == metric)
    assert (c.n_host, c.n_pod, c.verdict) == (RUNS, 0, "not comparable")
    if absent:
        why = ph.absent_reason("volume-churn", "nomad", absent)
        assert c.sentence.startswith(f"Not comparable (Nomad has no such phase): {why}."), c.sentence
        assert "INSUFFICIENT" not in c.flags and "INSUFFICIENT" not in summary.sentence, (c.flags, summary.sentence)
        assert "more" not in c.sentence and "runs on both sides" not in c.sentence
    else:
        assert "INSUFFICIENT" in c.flags and "6 more nomad runs are needed" in c.flag_details["INSUFFICIENT"]
        assert "no such phase" not in c.sentence


def test_phase_of_metric():
    got = {m: ph.phase_of_metric(m) for m in ("bound_p50_ms", "pv_deleted_makespan_s", "accepted_max_ms",
                                              "consumer_running_p95_ms", "errors", "wall_s", "objects_ok")}
    assert got == {"bound_p50_ms": "bound", "pv_deleted_makespan_s": "pv_deleted", "accepted_max_ms": "accepted",
                   "consumer_running_p95_ms": "consumer_running", "errors": None, "wall_s": None,
                   "objects_ok": None}
