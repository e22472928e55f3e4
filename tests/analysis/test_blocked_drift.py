"""Planted campaigns whose sides ran one after the other (every host run before every pod run, as imported logs or
a side re-run later give) on a machine that changes over the campaign: the verdict must not read the change as the
pod's effect (stats/blocked.py, sequence.trend_check). Each campaign is one cell, 10 runs a side, 2% noise with a
slow tail; seeds 1001-1020 (the rule was looked at on other seeds, 1-30)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.report_data import verdict_withheld

SEEDS = range(1001, 1021)
RUNS = 10


def _campaign(seed: int, *, fall: float, ratio: float, blocked: bool, slow_run: bool = False) -> CellSpec:
    """Host and pod runs, the host's first when ``blocked`` (else alternating); the machine ``fall`` slower from
    the first run to the last; the pod's true effect ``ratio``; with ``slow_run``, one run of each side (at a random
    place) at half speed (interference)."""
    rng = np.random.default_rng(seed)
    order = np.array([0] * RUNS + [1] * RUNS if blocked else [i % 2 for i in range(2 * RUNS)])
    trend = 1 - fall * np.arange(2 * RUNS) / (2 * RUNS - 1)

    def side(scale: float, which: int) -> np.ndarray:
        noise = np.exp(rng.normal(0, 0.02, RUNS)) * (1.0 - rng.gamma(2.0, 0.004, RUNS))
        out = scale * noise * trend[order == which]
        if slow_run:
            out[rng.integers(RUNS)] *= 0.5
        return out

    return CellSpec("node-a", SideSpec(side(1000, 0)), SideSpec(side(1000 * ratio, 1)), order=list(order),
                    metric="events_per_second", campaign=f"c{seed}")


# (case, machine's fall over the campaign, pod's true ratio, blocked, verdict it must give, least share giving it,
#  verdicts it must never give). Before the fix the first two read "slower" in 16 and 3 of these 20 campaigns.
CLAIMS = {"slower", "faster"}
CASES = [
    ("blocked, machine 10% slower by the end, no pod effect", 0.10, 1.0, True, "inconclusive", 0.9, CLAIMS),
    ("blocked, machine 5% slower by the end, no pod effect", 0.05, 1.0, True, "inconclusive", 0.9, CLAIMS),
    ("blocked, steady machine, pod 10% slower", 0.0, 0.90, True, "slower", 0.9, {"faster", "no detectable difference"}),
    ("interleaved, machine 10% slower by the end, no pod effect", 0.10, 1.0, False, "inconclusive", 0.9, CLAIMS),
]


@pytest.mark.parametrize("case,fall,ratio,blocked,verdict,least,never", CASES, ids=[c[0] for c in CASES])
def test_blocked_sides_on_a_changing_machine(con, case, fall, ratio, blocked, verdict, least, never):
    insert_cells(con, [_campaign(s, fall=fall, ratio=ratio, blocked=blocked) for s in SEEDS])
    got = [compare_campaign(con, f"c{s}").cells[0].verdict for s in SEEDS]
    assert not never & set(got), f"{case}: {got}"
    assert got.count(verdict) >= least * len(SEEDS), f"{case}: {got}"


def test_a_withheld_verdict_says_why_first(con):
    insert_cells(con, [_campaign(1001, fall=0.10, ratio=1.0, blocked=True)])
    c = compare_campaign(con, "c1001").cells[0]
    assert c.verdict == "inconclusive" and c.direction is None
    assert c.sentence.startswith("Inconclusive: the figures below read 'slower', but the sides ran one after the other")
    assert any("may be the machine changing over the campaign" in w for w in c.warnings)
    assert "Pod " in c.sentence and "slower than host (ratio" in c.sentence  # the figures still said, after


# (case, machine's fall, pod's true ratio): a "slower" verdict that stands on sides run one after the other says the
# ratio net of the trend, and its interval covers the truth (the ratio of medians' interval covered 0.90 in 0 of the
# 18 such campaigns with the machine changing; before the fix no cell said a net ratio)
NET_CASES = [("blocked, machine 10% slower by the end, pod 10% slower", 0.10, 0.90),
             ("blocked, steady machine, pod 10% slower", 0.0, 0.90)]


@pytest.mark.parametrize("case,fall,ratio", NET_CASES, ids=[c[0] for c in NET_CASES])
def test_a_verdict_on_blocked_sides_says_the_ratio_net_of_the_trend(con, case, fall, ratio):
    insert_cells(con, [_campaign(s, fall=fall, ratio=ratio, blocked=True) for s in SEEDS])
    slower = [c for s in SEEDS for c in compare_campaign(con, f"c{s}").cells if c.verdict == "slower"]
    covered = 0
    for c in slower:
        net = [w for w in c.warnings if w.startswith("Net of a steady change over the runs")]
        assert net and net[0] in c.sentence, f"{case}: {c.sentence}"
        # a cross-check of the verdict, not a better figure: with a warm-up in each block it covered the truth in 10
        # of 26 of r3's planted campaigns, and the sentence steered to it ("the ratio above may hold part of ...")
        assert "a cross-check" in net[0] and "may hold part of such a change" not in net[0], net[0]
        low, high = map(float, re.search(r"95% interval ([\d.]+) to ([\d.]+)", net[0]).groups())
        covered += low <= ratio <= high
    assert len(slower) >= 0.6 * len(SEEDS) and covered >= 0.9 * len(slower), f"{case}: {covered} of {len(slower)}"


def test_a_secondary_metric_quotes_its_primary_verdict_as_withheld(con):
    # r3's probe: the primary's verdict withheld by the trend check, a secondary metric (noisy latency, no effect)
    # beside it. Before, the secondary's note was written before the check and quoted "pod 4.2% slower, which is
    # the headline" for a primary the cell then called inconclusive (20 of 30 campaigns, seeds 4001-4030)
    withheld = []
    for s in range(4001, 4011):
        insert_cells(con, [_campaign(s, fall=0.10, ratio=1.0, blocked=True)])
        rng = np.random.default_rng(s)
        for (rid,) in con.execute("SELECT run_id FROM runs WHERE campaign = ? ORDER BY run_id", [f"c{s}"]).fetchall():
            con.execute("INSERT INTO metrics VALUES (?, 'latency_avg', ?, 'ms', false)",
                        [rid, float(np.exp(rng.normal(0, 0.3)))])
        cells = {c.metric: c for c in compare_campaign(con, f"c{s}").cells}
        prim, sec = cells["events_per_second"], cells["latency_avg"]
        if prim.sentence.startswith("Inconclusive: the figures below read"):
            withheld.append(s)
            said = sec.sentence[sec.sentence.index("Secondary metric"):] if "Secondary metric" in sec.sentence else ""
            assert not said or "says inconclusive" in said, f"c{s}: {said}"
    assert len(withheld) >= 5, withheld  # the case arose


def test_a_withheld_verdict_is_flagged_for_the_matrices_and_the_summary(con):
    # r3: the cell withheld by the trend check had flags [], so the HTML and workbook matrices
    # (report_data.verdict_withheld reads the flags) painted it in its ratio's colour and the cross-node summary
    # counted it as a clean node
    insert_cells(con, [_campaign(1001, fall=0.10, ratio=1.0, blocked=True)])
    report = compare_campaign(con, "c1001")
    c = report.cells[0]
    assert c.verdict == "inconclusive"
    assert verdict_withheld(c) == ["SEQUENTIAL"], c.flags
    assert c.flag_details["SEQUENTIAL"].startswith("Inconclusive: the figures below read 'slower'")
    assert report.summary[0].nodes_included == [] and report.summary[0].nodes_excluded == {"node-a": ["SEQUENTIAL"]}


def test_one_slow_run_a_side_does_not_withhold_a_real_effect(con):
    # r3: least squares followed a single slow run, so one run at half speed withheld a real 10% effect on a steady
    # machine (right 24 -> 2 of 30 planted campaigns). The fit now leaves the runs flagged OUTLIERS out
    insert_cells(con, [_campaign(s, fall=0.0, ratio=0.90, blocked=True, slow_run=True) for s in SEEDS])
    cells = [compare_campaign(con, f"c{s}").cells[0] for s in SEEDS]
    got = [c.verdict for c in cells]
    assert all("OUTLIERS" in c.flags for c in cells), [c.flags for c in cells]
    assert got.count("slower") >= 0.8 * len(SEEDS) and not {"faster", "no detectable difference"} & set(got), got
