"""kube-burner's min and avg of each phase (P_min_ms, P_avg_ms) are descriptive: shown with their ratio, interval and
raw p-value, but in neither correction family (podtax.phases.is_descriptive), so they move no other cell's adjusted
p-value. With them in the secondary Holm family, 6 runs a side (the default) could call no secondary metric of a
two-node volume-churn campaign (the smallest Mann-Whitney p of 6 against 6, 2/924, times 26 hypotheses is > 0.05)."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from podtax.campaign import Repetitions
from podtax.phases import DESCRIPTIVE_WHY, is_descriptive
from podtax_analyzer.campaign_compare import compare_campaigns
from podtax_analyzer.cell_analysis import analyze, finalize
from podtax_analyzer.celldata import CellData, Side
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.exports import write_exports
from podtax_analyzer.store import Store
from timeline_synth import run_events

RUNS = Repetitions().min  # 6


def _store(tmp_path, campaigns: dict[str, float], nodes: int) -> Store:
    """Each campaign (name -> nomad's scale against kubernetes) ran volume-churn on ``nodes`` nodes, RUNS a side."""
    s = Store(tmp_path / "p.duckdb")
    batch = []
    for k, (name, scale) in enumerate(campaigns.items()):
        for n in range(nodes):
            for seq in range(RUNS):
                for env in ("kubernetes", "nomad"):
                    batch += run_events(name, env, "volume-churn", 10000 * k + 1000 * n + seq * 2 + (env == "nomad"),
                                        scale=scale if env == "nomad" else 1.0, node=f"node-{n}")
    s.write_batch(batch)
    return s


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_clear_secondary_difference_gets_a_verdict_at_the_default_runs(tmp_path, nodes):
    s = _store(tmp_path, {"kn": 0.5}, nodes)  # nomad 2x faster in every phase: the sides' runs fully apart
    rep = compare_campaign(s.cursor(), "kn")  # holm
    s.close()
    p95 = [c for c in rep.cells if c.metric == "provisioned_p95_ms"]
    assert len(p95) == nodes and all(c.verdict == "faster" for c in p95), [(c.p_adjusted, c.verdict) for c in p95]
    described = [c for c in rep.cells if is_descriptive(c.test, c.metric) and c.n_host and c.n_pod]  # both backends
    assert {c.metric for c in described} == {f"{p}_{s}_ms" for p in ("provisioned", "pv_deleted")
                                             for s in ("min", "avg")}
    for c in described:
        assert c.p_value is not None and c.p_value < 0.05 and c.ratio is not None and c.ci_high < 1, c
        assert c.p_adjusted is None and c.verdict == "inconclusive" and c.direction is None, c
        assert c.descriptive, c  # machine-readable, besides the sentence
        assert c.sentence.startswith("Descriptive, not tested (kube-burner's min/avg):"), c.sentence
        assert "unadjusted" in c.sentence and "faster" in c.sentence, c.sentence
        # not set against the primary's verdict (comparisons._reconcile): it has none of its own
        assert not [w for w in [c.sentence, *c.warnings] if "Secondary metric" in w], c


def test_descriptive_figures_move_no_other_cells_adjusted_p(tmp_path):
    s = _store(tmp_path, {"kn": 0.5}, 1)
    rep = compare_campaign(s.cursor(), "kn")
    s.close()
    tested = [c for c in rep.cells if c.p_value is not None and not c.primary and not is_descriptive(c.test, c.metric)]
    # Holm's smallest adjusted p: the smallest p times the secondary family's size, min and avg not counted
    least = min(tested, key=lambda c: c.p_value)
    assert least.p_adjusted == pytest.approx(least.p_value * len(tested))


def test_podtax_compare_leaves_descriptive_figures_out_of_its_families(tmp_path):
    # nomad 2x faster in BASE, as fast as kubernetes in NEW: every phase's ratio doubled
    s = _store(tmp_path, {"base": 0.5, "new": 1.0}, 2)
    change = compare_campaigns(s.cursor(), "base", "new")  # holm
    s.close()
    p95 = [c for c in change.cells if c.metric == "provisioned_p95_ms"]
    assert len(p95) == 2 and all(c.verdict == "worsened" for c in p95), [(c.p_adjusted, c.verdict) for c in p95]
    described = [c for c in change.cells if is_descriptive(c.test, c.metric)]  # a ratio, or kubernetes' median
    assert {c.metric for c in described} >= {"provisioned_min_ms", "provisioned_avg_ms", "bound_avg_ms"}
    for c in described:
        assert c.p_value is not None and c.change is not None and c.change_ci_low is not None, c
        assert c.p_adjusted is None and c.verdict == "inconclusive" and c.descriptive, c
        assert c.sentence.startswith("Descriptive, not tested (kube-burner's min/avg):"), c.sentence
        assert "unadjusted" in c.sentence, c.sentence
    tested = [c for c in change.cells if c.p_value is not None and not c.primary
              and not is_descriptive(c.test, c.metric)]
    assert not any(c.descriptive for c in change.cells if not is_descriptive(c.test, c.metric))
    least = min(tested, key=lambda c: c.p_value)
    assert least.p_adjusted == pytest.approx(min(1.0, least.p_value * len(tested)))


def test_descriptive_metrics_are_the_control_plane_phases_min_and_avg():
    assert is_descriptive("volume-churn", "bound_min_ms") and is_descriptive("pod-startup", "ready_avg_ms")
    assert not is_descriptive("volume-churn", "bound_p95_ms") and not is_descriptive("volume-churn", "bound_max_ms")
    assert not is_descriptive("fio", "clat_avg_ms")  # another tool's mean is an ordinary metric


def _phase(kubernetes: list[float], nomad: list[float]) -> CellData:
    return CellData("c", "local", "n", "volume-churn", "count=20", "bound_min_ms", "ms", False,
                    Side("kubernetes", np.array(kubernetes, float), versions=["v"], units=["ms"]),
                    Side("nomad", np.array(nomad, float), versions=["v"], units=["ms"]),
                    baseline="kubernetes", candidate="nomad")


@pytest.mark.parametrize(("kubernetes", "nomad", "said"), [
    ([5, 6, 7, 5, 6, 7], [0] * 6, "no ratio: the nomad median is 0"),
    ([0] * 6, [4, 5, 6, 4, 5, 6], "no ratio: the kubernetes median is 0"),
    ([0] * 6, [0] * 6, "no ratio: the kubernetes and nomad medians are 0"),
])
def test_a_descriptive_figure_with_a_zero_median_is_still_said_descriptive(kubernetes, nomad, said):
    # review hR7: a median of 0 gave "Inconclusive: no ratio could be computed" and, both sides all 0, "no
    # detectable difference", against the documented verdict 'inconclusive' of a descriptive figure
    a = analyze(_phase(kubernetes, nomad), threshold=0.01, seed=0)
    c = finalize(a, None, threshold=0.01, correction=f"not tested (descriptive: {DESCRIPTIVE_WHY})", descriptive=True)
    assert c.verdict == "inconclusive" and c.ratio is None, (c.verdict, c.sentence)
    assert c.sentence.startswith(f"Descriptive, not tested ({DESCRIPTIVE_WHY}): {said} ("), c.sentence


def test_descriptive_figures_are_marked_in_the_json_summary_and_exports(tmp_path):
    s = _store(tmp_path, {"kn": 0.5}, 2)
    rep = compare_campaign(s.cursor(), "kn")
    write_exports(s.cursor(), rep, tmp_path / "csv", "csv")
    s.close()
    marked = {c.metric for c in rep.cells if c.descriptive}
    assert marked == {c.metric for c in rep.cells if is_descriptive(c.test, c.metric)} \
        and "provisioned_min_ms" in marked and "provisioned_p95_ms" not in marked, marked
    for item in rep.summary:  # the sentence across nodes says so too
        assert ("(descriptive, not tested):" in item.sentence) == (item.metric in marked), item.sentence
    with open(tmp_path / "csv" / "comparisons.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    cols = list(rows[0])  # added after the columns of before: a sheet reading the file by position reads the same
    assert cols[cols.index("pod_upper_bound") + 1] == "descriptive"
    assert {r["metric"] for r in rows if r["descriptive"] == "true"} == marked, rows[:2]
