"""Two cosmetic faults of a cell's figures (pA2, session 52), through insert_cells and compare_campaign on a real
DuckDB file. Sides of identical values (100 on every host run, 90 on every pod run) gave ratio 0.9 beside
'95% CI 0.8999999999999996 to 0.8999999999999996' (the Hodges-Lehmann interval's float rounding): an interval end
within float rounding of the ratio is the ratio. A run whose stored value is NaN or infinite (an edited or forged
database; the parser stores none) gave 'Inconclusive: no ratio could be computed' without saying why: the sentence
now names the runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, open_db
from podtax_analyzer.comparisons import compare_campaign


def _cell(tmp_path: Path, host: np.ndarray, pod: np.ndarray):
    con = open_db(tmp_path / "p.duckdb")
    try:
        insert_cells(con, [CellSpec("node-a", SideSpec(host), SideSpec(pod), higher_is_better=True,
                                    metric="events_per_sec", unit="events/s")])
        (cell,) = compare_campaign(con, "synthetic").cells
    finally:
        con.close()
    return cell


def test_identical_sides_give_the_ratio_as_their_interval(tmp_path: Path) -> None:
    cell = _cell(tmp_path, np.full(10, 100.0), np.full(10, 90.0))
    assert (cell.ratio, cell.ci_low, cell.ci_high) == (0.9, 0.9, 0.9), (cell.ratio, cell.ci_low, cell.ci_high)
    assert "95% CI 0.900 to 0.900" in cell.sentence, cell.sentence


@pytest.mark.parametrize(("side", "value", "said"), [
    ("host", np.nan, "1 of 10 host runs stored a value that is not a finite number (NaN or infinity)"),
    ("pod", np.inf, "1 of 10 pod runs stored a value that is not a finite number (NaN or infinity)"),
])
def test_a_value_not_finite_is_named_as_why_there_is_no_ratio(side: str, value: float, said: str,
                                                              tmp_path: Path) -> None:
    host, pod = 100.0 + np.arange(10) * 0.1, 97.0 + np.arange(10) * 0.1
    if side == "host":
        host[-1] = value
    else:
        pod[-1] = value
    cell = _cell(tmp_path, host, pod)
    assert cell.ratio is None
    assert cell.sentence.startswith(f"Inconclusive: no ratio could be computed: {said} ("), cell.sentence


def test_finite_values_keep_their_sentence(tmp_path: Path) -> None:
    cell = _cell(tmp_path, 100.0 + np.arange(10) * 0.1, 97.0 + np.arange(10) * 0.1)
    assert cell.ratio is not None and "not a finite number" not in cell.sentence, cell.sentence
