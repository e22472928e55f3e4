"""Outliers name their runs although the values are loaded without run ids (run_ids.run_ids_at reads the
few named ones afterwards, matching a position by its value and its rank among equal values)."""

from __future__ import annotations

import numpy as np
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from podtax_analyzer.celldata import load_cells
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.run_ids import UNKNOWN_RUN, run_ids_at


def _cells() -> list[CellSpec]:
    rng = np.random.default_rng(3)
    host = lognormal(rng, 1000, 0.01, 30)
    host[[4, 9]] = 1400.0  # two outliers with the same value: each must get its own run
    host[21] = 600.0  # (three alike, 40% away, would be a mode of their own: BIMODAL, stats/modes.separated_modes)
    pod = np.round(lognormal(rng, 1000, 0.01, 30))  # integer values: ties everywhere
    pod[17] = 400.0
    return [CellSpec("node-a", SideSpec(host), SideSpec(pod)),
            CellSpec("node-b", SideSpec(lognormal(rng, 1000, 0.01, 12)), SideSpec(np.full(12, 7.0)))]


def test_outliers_carry_the_run_ids_of_their_positions(con):
    insert_cells(con, _cells())
    report = compare_campaign(con, "synthetic")
    a = next(c for c in report.cells if c.node == "node-a")
    got = sorted((o.env, o.run_id, o.value) for o in a.outliers)
    # analysis_synth names a run "<campaign>-<cell>-<side letter>-<position in the side's values>"
    assert got == [("host", "synthetic-0-h-21", 600.0), ("host", "synthetic-0-h-4", 1400.0),
                   ("host", "synthetic-0-h-9", 1400.0), ("kubernetes", "synthetic-0-k-17", 400.0)]


def test_every_position_of_a_side_with_ties_maps_to_its_own_run(con):
    insert_cells(con, _cells())
    cells = load_cells(con, "synthetic")
    wanted = [(c, s, i) for c in cells for s in (c.host, c.pod) for i in range(s.n)]
    ids = run_ids_at(con, wanted)
    want = [f"synthetic-{int(c.node == 'node-b')}-{s.env[0]}-{i}" for c, s, i in wanted]
    assert ids == want
    assert run_ids_at(con, []) == []


def test_a_run_gone_meanwhile_is_named_unknown(con):
    insert_cells(con, _cells())
    cells = load_cells(con, "synthetic")
    con.execute("DELETE FROM metrics WHERE run_id = 'synthetic-0-h-9'")
    c = cells[0]
    assert run_ids_at(con, [(c, c.host, 4), (c, c.host, 9)]) == ["synthetic-0-h-4", UNKNOWN_RUN]
