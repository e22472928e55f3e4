"""Planted campaigns that an audit (Dec 3) found answered with confidence and no warning, each fed
through the whole comparison: a steady drift over 10 runs, two modes at 10 runs, latencies at their
printing resolution, a recorded tool version the logs contradict, nodes that disagree, and one
outlier among 6 runs."""

from __future__ import annotations

import numpy as np
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from podtax_analyzer.comparisons import compare_campaign

PARAMS = {"threads": 4, "time": 10}


def _cell(node: str, host, pod, *, metric="events_per_second", unit="events/s", hib=True) -> CellSpec:
    return CellSpec(node, SideSpec(np.asarray(host, float)), SideSpec(np.asarray(pod, float)), params=PARAMS,
                    metric=metric, unit=unit, higher_is_better=hib)


def _only(con):
    return compare_campaign(con, "synthetic").cells[0]


def test_a_steady_drift_over_ten_runs_withholds_the_verdict(con):
    # the host fell from 1000 to 850 run by run; the pod held at 860 (Pettitt alone: p = 0.066)
    insert_cells(con, [_cell("node-a", np.linspace(1000, 850, 10), np.full(10, 860.0) + np.arange(10) % 3)])
    c = _only(con)
    assert "DRIFT" in c.flags and c.verdict == "inconclusive"
    assert "fell by" in c.flag_details["DRIFT"] and "Mann-Kendall trend p < 0.0001" in c.flag_details["DRIFT"]


def test_two_modes_ten_percent_apart_at_ten_runs_give_no_ratio(con):
    host = [100.9, 89.2, 99.1, 90.8, 101.0, 89.5, 98.8, 90.6, 100.3, 91.0]
    pod = [60.5, 54.2, 59.4, 54.7, 60.1, 53.9, 59.8, 54.4, 60.2, 54.0]
    insert_cells(con, [_cell("node-a", host, pod)])
    c = _only(con)
    assert "BIMODAL" in c.flags and c.ratio is None
    # each side is split at its own boundary: both show two modes, not "host: 100%; pod: 100%"
    assert c.modes.host.modes[0].n == 5 and c.modes.pod.modes[0].n == 5
    assert c.modes.host.boundary > 90 and c.modes.pod.boundary < 60
    assert "100%" not in c.flag_details["BIMODAL"]


def test_latencies_at_their_printing_resolution_are_not_two_modes(con):
    host = [1.05, 1.06, 1.05, 1.06, 1.05, 1.06, 1.06, 1.05, 1.05, 1.06]
    insert_cells(con, [_cell("node-a", host, list(host), metric="latency_avg_ms", unit="ms", hib=False)])
    c = _only(con)
    assert "BIMODAL" not in c.flags and c.verdict == "no detectable difference"


def test_a_recorded_version_the_logs_contradict_is_named(con):
    rng = np.random.default_rng(3)
    said = "VERSION_MISMATCH: the log says sysbench 1.0.20, the run recorded 1.0.18"
    pod = SideSpec(lognormal(rng, 1000, 0.01, 10), flags=[[said]] * 10)
    insert_cells(con, [CellSpec("node-a", SideSpec(lognormal(rng, 1000, 0.01, 10)), pod, params=PARAMS,
                                metric="events_per_second")])
    c = _only(con)
    assert "VERSION_MISMATCH" in c.flags and "10 pod runs" in c.flag_details["VERSION_MISMATCH"]
    assert said in c.flag_details["VERSION_MISMATCH"]


def test_nodes_that_disagree_are_said_to_before_their_mean(con):
    rng = np.random.default_rng(10)
    cells = [_cell(node, lognormal(rng, 1000, 0.005, 10), lognormal(rng, 1000 * r, 0.005, 10))
             for node, r in (("node-a", 0.80), ("node-b", 1.0), ("node-c", 1.0))]
    insert_cells(con, cells)
    s = compare_campaign(con, "synthetic").summary[0]
    assert s.nodes_disagree and s.sentence.index("disagree") < s.sentence.index("geometric mean")
    assert "node-a" in s.sentence and "describes none of them" in s.sentence


def test_nodes_that_agree_keep_the_plain_mean(con):
    rng = np.random.default_rng(9)
    insert_cells(con, [_cell(n, lognormal(rng, 1000, 0.01, 10), lognormal(rng, 950, 0.01, 10))
                       for n in ("node-a", "node-b")])
    s = compare_campaign(con, "synthetic").summary[0]
    assert not s.nodes_disagree and "disagree" not in s.sentence


def test_an_outlier_among_six_runs_is_not_said_to_be_resisted(con):
    host = [900.0, 905.0, 898.0, 902.0, 899.0, 901.0]
    pod = [880.0, 884.0, 879.0, 2000.0, 881.0, 883.0]
    insert_cells(con, [_cell("node-a", host, pod)])
    c = _only(con)
    assert "OUTLIERS" in c.flags and "widen the interval" in c.flag_details["OUTLIERS"]
    assert "resist them" not in c.flag_details["OUTLIERS"]


def test_runs_that_ran_other_parameters_than_their_cell_withhold_the_verdict(con):
    # an import manifest said threads=1 for a log of 2 threads: the parser flags the run, the cell did not
    rng = np.random.default_rng(4)
    said = "THREADS_MISMATCH: the tool ran 2 threads, 1 were requested"
    host = SideSpec(lognormal(rng, 1000, 0.01, 10), flags=[[]] * 9 + [[said]])
    insert_cells(con, [CellSpec("node-a", host, SideSpec(lognormal(rng, 900, 0.01, 10)), params=PARAMS,
                                metric="events_per_second")])
    c = _only(con)
    assert "PARAMS_MISMATCH" in c.flags and c.verdict == "inconclusive"
    assert "1 host run ran with other parameters" in c.flag_details["PARAMS_MISMATCH"] and said in c.sentence + \
        c.flag_details["PARAMS_MISMATCH"]
