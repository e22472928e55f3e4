"""Planted cells (pA, session 52) whose sides each hold a second group of runs at the other side's level: two
machines (an amd64 node and an arm64 node at 35% of its speed, say, reported under one node name) mixed into one cell
in different shares, 8 and 2 host runs, 2 and 8 pod runs, and no pod effect on either machine. Each side's median sat
in its larger share, so the cell read "Pod 64.9% slower than host" (p = 0.010) with the groups only said beside it,
while at 3 and 7 runs the same mix is BIMODAL and gives no ratio. Now the verdict is withheld: the sides differ in how
many runs fell at each level, not by a shift of every run (stats/verdict.py's groups_cross). Real DuckDB file,
compare_campaign."""

from __future__ import annotations

import numpy as np
from analysis_synth import CellSpec, SideSpec, insert_cells
from podtax_analyzer.comparisons import compare_campaign

NOISE = [1.0, 1.004, 0.996, 1.002, 0.998, 1.001, 0.999, 1.003]  # +-0.4%, 8 runs


def _cell(con, host, pod):
    insert_cells(con, [CellSpec("node-a", SideSpec(np.asarray(host, float)), SideSpec(np.asarray(pod, float)))])
    (c,) = compare_campaign(con, "synthetic").cells
    return c


def test_two_machines_mixed_in_other_shares_give_no_verdict(con):
    host = [1000 * x for x in NOISE] + [350.0, 351.5]  # 8 runs on the fast machine, 2 on the slow one
    pod = [1001.0, 998.5] + [350 * x for x in NOISE]  # 2 and 8: the same two levels, the other way round
    c = _cell(con, host, pod)
    assert c.verdict == "inconclusive" and c.direction is None, c.sentence
    assert c.sentence.startswith("Inconclusive: each side holds runs at the other side's level"), c.sentence
    assert "2 of 10 host runs (350.0, 351.5 events/s)" in c.sentence and "not by a shift of every run" in c.sentence
    assert c.ratio is not None and "OUTLIERS" in c.flags  # the figures stay


def test_slow_groups_on_both_sides_keep_the_verdict(con):
    # interference on both sides (2 runs of 14 at half speed), a real 10% pod tax: the groups lie the same way
    host = [1000 * x for x in NOISE + NOISE[:4]] + [500.0, 501.0]
    pod = [900 * x for x in NOISE + NOISE[:4]] + [450.0, 451.0]
    c = _cell(con, host, pod)
    assert c.verdict == "slower" and "second group" in c.sentence, c.sentence
