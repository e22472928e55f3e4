"""A cell CONFOUNDED for two reasons says both (review r9 L2: a side mixing the PROVISION_START starts dropped the
other reason, e.g. its runs' units, from the flag's details)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from podtax_analyzer.cell_analysis import analyze
from podtax_analyzer.celldata import CellData, Side

MIXED = "Not comparable: 5 of 10 kubernetes runs timed provisioned from both starts."


def test_a_cell_confounded_for_two_reasons_says_both() -> None:
    values = np.linspace(100.0, 110.0, 10)
    cell = CellData("c", "local", "node-1", "volume-churn", "", "provisioned_p50_ms", "ms", False,
                    Side("host", np.array([])), Side("kubernetes", values, units=["ms", "s"]), "host", "kubernetes")
    details = analyze(replace(cell, starts_mixed=MIXED), threshold=0.01, seed=0).flag_details
    assert details["CONFOUNDED"].startswith(MIXED), details["CONFOUNDED"]
    assert "ms + s" in details["CONFOUNDED"], details["CONFOUNDED"]
    alone = analyze(cell, threshold=0.01, seed=0).flag_details["CONFOUNDED"]
    assert MIXED not in alone and "ms + s" in alone, alone
