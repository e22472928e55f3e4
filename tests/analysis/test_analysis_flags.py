"""Each flag on a planted situation, through a real DuckDB file."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, fixture_campaign, insert_cells, lognormal
from podtax_analyzer.comparisons import UnknownCampaign, cell_stats_for, cell_values, compare_campaign


@pytest.fixture
def report(con):
    insert_cells(con, fixture_campaign())
    return compare_campaign(con, "synthetic")


def _cell(report, node, test="sysbench-cpu"):
    return next(c for c in report.cells if c.node == node and c.test == test)


def test_every_flag_has_a_sentence(report):
    for c in report.cells:
        assert set(c.flags) == set(c.flag_details)
        assert all(len(s) > 30 and s.endswith(".") for s in c.flag_details.values())
        assert c.sentence


def test_clean_slowdown_is_slower(report):
    c = _cell(report, "node-a")
    assert c.flags == [] and c.verdict == "slower"
    assert c.ci_low < 0.97 < c.ci_high or abs(c.ratio - 0.97) < 0.01
    assert "slower" in c.sentence and f"{c.ratio:.3f}" in c.sentence


def test_no_difference(report):
    c = _cell(report, "node-b")
    assert c.verdict == "no detectable difference" and c.flags == []


def test_version_mismatch_is_confounded_without_headline(report):
    c = _cell(report, "node-c")
    assert "CONFOUNDED" in c.flags
    assert c.ratio is None and c.ci_low is None and c.ci_high is None and c.change_pct is None
    assert c.verdict == "inconclusive"
    assert c.host_tool_version == "sysbench 1.0.18" and c.pod_tool_version == "sysbench 1.0.20"
    text = c.flag_details["CONFOUNDED"]
    assert "1.0.18" in text and "1.0.20" in text
    assert f"{c.host_median:.1f}" in text and "no ratio" in text


def test_four_runs_insufficient_says_two_more(report):
    c = _cell(report, "node-d")
    assert "INSUFFICIENT" in c.flags and c.verdict == "inconclusive"
    assert "2 more host runs" in c.flag_details["INSUFFICIENT"]


def test_thirteen_against_ninety_six_imbalanced_and_throttled(report):
    c = _cell(report, "node-e")
    assert (c.n_host, c.n_pod) == (13, 96)
    assert {"IMBALANCED", "THROTTLED"} <= set(c.flags)
    assert "13" in c.flag_details["IMBALANCED"] and "96" in c.flag_details["IMBALANCED"]
    assert "96 of 96 pod runs" in c.flag_details["THROTTLED"]
    assert c.verdict == "slower"  # a real slowdown, flagged


def test_drift(report):
    c = _cell(report, "node-f")
    assert "DRIFT" in c.flags and "BIMODAL" not in c.flags
    assert "host values fell by" in c.flag_details["DRIFT"] and "per run" in c.flag_details["DRIFT"]
    assert "(down 6." in c.flag_details["DRIFT"]  # the planted 6% step
    assert c.verdict == "inconclusive" and "withheld" in c.sentence  # issue 13 item 2


def test_outliers_reported_not_dropped(report):
    c = _cell(report, "node-g")
    assert c.flags == ["OUTLIERS"]
    assert sorted(o.value for o in c.outliers) == [700.0, 1400.0]
    assert c.n_host == 20  # kept


def test_short(report):
    c = _cell(report, "node-h")
    assert "SHORT" in c.flags and "2 host runs" in c.flag_details["SHORT"]


def test_planted_two_mode_host(report):
    c = _cell(report, "node-a", "hdparm")
    assert "BIMODAL" in c.flags and c.ratio is None and c.verdict == "inconclusive"
    host = {m.label: m for m in c.modes.host.modes}
    pod = {m.label: m for m in c.modes.pod.modes}
    assert (host["low"].n, host["high"].n) == (77, 83)
    assert host["low"].share == pytest.approx(77 / 160) and host["high"].share == pytest.approx(83 / 160)
    assert host["low"].median == pytest.approx(130, rel=0.02) and host["high"].median == pytest.approx(238, rel=0.02)
    assert pod["high"].share == 1.0 and pod["low"].n == 0
    text = c.flag_details["BIMODAL"]
    assert "77 runs (48%)" in text and "83 runs (52%)" in text


def test_pod_only_bimodal_with_throughput_direction(con):
    rng = np.random.default_rng(3)
    pod = rng.permutation(np.concatenate([lognormal(rng, 500, 0.01, 30), lognormal(rng, 900, 0.01, 30)]))
    insert_cells(con, [CellSpec("n", SideSpec(lognormal(rng, 900, 0.01, 60)), SideSpec(pod))])
    c = compare_campaign(con, "synthetic").cells[0]
    assert "BIMODAL" in c.flags and c.modes.pod.bimodal and not c.modes.host.bimodal
    assert c.ratio is None


def test_lower_is_better_metric_direction(con):
    rng = np.random.default_rng(4)
    insert_cells(con, [CellSpec("n", SideSpec(lognormal(rng, 10.0, 0.01, 20)), SideSpec(lognormal(rng, 10.5, 0.01, 20)),
                                metric="latency_ms", unit="ms", higher_is_better=False)])
    c = compare_campaign(con, "synthetic").cells[0]
    assert c.ratio > 1 and c.change_pct > 0 and c.verdict == "slower" and "slower" in c.sentence


def test_build_mismatch_is_confounded(con):
    rng = np.random.default_rng(5)
    insert_cells(con, [CellSpec("n", SideSpec(lognormal(rng, 10, 0.01, 20), tool_build="a1"),
                                SideSpec(lognormal(rng, 10, 0.01, 20), tool_build="b2"))])
    c = compare_campaign(con, "synthetic").cells[0]
    assert c.flags == ["CONFOUNDED"] and "(build a1)" in c.host_tool_version


def test_unknown_campaign(con):
    with pytest.raises(UnknownCampaign):
        compare_campaign(con, "nope")


def test_bad_arguments(con):
    insert_cells(con, fixture_campaign())
    with pytest.raises(ValueError):
        compare_campaign(con, "synthetic", correction="sidak")
    with pytest.raises(ValueError):
        compare_campaign(con, "synthetic", threshold=2)


def test_bh_correction_and_seed_stability(con):
    insert_cells(con, fixture_campaign())
    a = compare_campaign(con, "synthetic", correction="bh")
    b = compare_campaign(con, "synthetic", correction="bh")
    assert [c.model_dump() for c in a.cells] == [c.model_dump() for c in b.cells]
    assert all(c.p_adjusted is None or c.p_adjusted >= c.p_value for c in a.cells)


def test_cell_values_and_stats_for_runner(con):
    insert_cells(con, fixture_campaign())
    rep = compare_campaign(con, "synthetic")
    c = _cell(rep, "node-e")
    vals = cell_values(con, c.id)
    assert vals is not None and len(vals.runs) == 13 + 96
    assert [r.order for r in vals.runs] == list(range(109))
    assert {r.env for r in vals.runs} == {"host", "kubernetes"}
    assert sorted(r.side_order for r in vals.runs if r.env == "host") == list(range(13))
    assert cell_values(con, "000000000000") is None
    stats = cell_stats_for(con, "synthetic", "node-e", "sysbench-cpu", "threads=4 time=10")
    assert len(stats) == 1
    s = stats[0]
    assert (s.n_host, s.n_pod, s.ratio, s.ci_low, s.verdict) == (13, 96, c.ratio, c.ci_low, c.verdict)
    assert s.flags == list(c.flags)
