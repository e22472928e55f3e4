"""Node scores: median and mean per run (never a sum), counts, interval, age, and since_runs."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.scores import median_interval, node_scores


@pytest.mark.parametrize("n,has", [(5, False), (6, True), (100, True)])
def test_median_interval(n, has):
    x = np.arange(1.0, n + 1)
    ci = median_interval(x)
    assert (ci is not None) is has
    if ci:
        assert ci[0] <= np.median(x) <= ci[1]


def _cells():
    return [CellSpec("n1", SideSpec(np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0])),
                     SideSpec(np.array([5.0, 6.0, 7.0]))),
            CellSpec("n2", SideSpec(np.array([1.0, 2.0])), SideSpec(np.array([3.0, 4.0])), campaign="other")]


def test_scores_per_run(con):
    insert_cells(con, _cells())
    scores = {(s.node, s.env): s for s in node_scores(con)}
    host = scores[("n1", "host")]
    assert (host.median, host.mean, host.n) == (40.0, 40.0, 7)
    assert host.ci_low is not None and host.ci_low <= 40 <= host.ci_high
    pod = scores[("n1", "kubernetes")]
    assert (pod.median, pod.mean, pod.n, pod.ci_low) == (6.0, 6.0, 3, None)
    newest = con.execute("SELECT max(ended_at) FROM runs WHERE node = 'n1' AND env = 'host'").fetchone()[0]
    assert host.updated_at == newest
    assert len(scores) == 4


def test_scores_since_runs_and_filters(con):
    insert_cells(con, _cells())
    touched = node_scores(con, since_runs=["other-1-k-0"])
    assert [(s.node, s.env) for s in touched] == [("n2", "kubernetes")]
    assert touched[0].n == 2  # the whole key is recomputed, not just the touched run
    assert node_scores(con, since_runs=[]) == []
    assert {s.node for s in node_scores(con, cluster="local", node="n1")} == {"n1"}
    assert node_scores(con, cluster="elsewhere") == []
    assert all(s.env == "host" for s in node_scores(con, env="host"))


def _flag_case(kind: str) -> CellSpec:
    rng = np.random.default_rng(1)
    clean = 1000 * np.exp(rng.normal(0, 0.01, 20))
    pod = SideSpec(clean.copy())
    if kind == "BIMODAL":
        pod = SideSpec(np.concatenate([clean[:10] * 0.6, clean[10:]]))
    elif kind == "THROTTLED":
        pod = SideSpec(clean.copy(), cpu_limit=1.0, nr_throttled=[0] * 19 + [5], throttled_usec=[0] * 19 + [900])
    elif kind == "OVERLAP":
        pod = SideSpec(clean.copy(), flags=[[]] * 19 + [["OVERLAP: another run shared the node"]])
    host = SideSpec(clean.copy(), tool_version="1.0.18") if kind == "CONFOUNDED" else SideSpec(clean.copy())
    if kind == "CONFOUNDED":  # two builds among the pod runs, interleaved (x, then the default, then x again: a
        # clean switch would be scored by the newest build's runs alone, build_switch.py)
        other = SideSpec(clean.copy(), tool_build="x")
        return CellSpec("n", host, other), CellSpec("n", host, pod), CellSpec("n", host, other)
    return (CellSpec("n", host, pod),)


@pytest.mark.parametrize("kind", ["", "BIMODAL", "THROTTLED", "OVERLAP", "CONFOUNDED"])
def test_score_flags_name_evidence_that_must_not_drive_placement(con, kind):
    insert_cells(con, list(_flag_case(kind)))
    pod = next(s for s in node_scores(con) if s.env == "kubernetes")
    assert pod.flags == ([kind] if kind else [])


def test_a_node_score_is_bimodal_from_the_runs_the_report_checks(con):
    """6 runs in two tight modes 30% apart: the report flags the cell BIMODAL from 6 runs (stats/modes.py); its
    node score was unflagged below 10 runs and steered placement on a median between the modes (review hR #2)."""
    host = np.array([100.0, 130.5, 100.5, 131.0, 101.0, 130.0])
    insert_cells(con, [CellSpec("n", SideSpec(host), SideSpec(np.array([90.0, 91.0, 90.5, 91.5, 90.2, 91.2])))])
    (cell,) = compare_campaign(con, "synthetic").cells
    assert "BIMODAL" in cell.flags
    scores = {s.env: s for s in node_scores(con)}
    assert scores["host"].flags == ["BIMODAL"] and scores["kubernetes"].flags == []
