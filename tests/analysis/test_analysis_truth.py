"""Known truths: coverage of the 95% interval at a true 3% overhead, and A/A false positives.

Each simulated campaign is one cell (its own node) stored in one real DuckDB file; a cell's bootstrap
is seeded from the cell id, so the cells are independent simulations.
Run with -s to see the measured figures.
"""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells
from podtax_analyzer.comparisons import compare_campaign

TRUE_RATIO = 0.97
CAMPAIGNS = 200


def realistic(rng: np.random.Generator, scale: float, n: int) -> np.ndarray:
    """Benchmark-like noise: lognormal 1% jitter plus a right-skewed slow-down tail (gamma)."""
    return scale * np.exp(rng.normal(0.0, 0.01, n)) * (1.0 - rng.gamma(2.0, 0.004, n))


def _simulate(con, runs: int, ratio: float, seed: int):
    rng = np.random.default_rng(seed)
    cells = [CellSpec(f"sim-{i:03d}", SideSpec(realistic(rng, 1000.0, runs)),
                      SideSpec(realistic(rng, 1000.0 * ratio, runs))) for i in range(CAMPAIGNS)]
    insert_cells(con, cells, seed=seed)
    return compare_campaign(con, "synthetic")


@pytest.mark.slow
@pytest.mark.parametrize("runs,minimum", [(20, 0.93), (10, 0.90)])
def test_interval_covers_true_overhead(con, runs, minimum):
    report = _simulate(con, runs, TRUE_RATIO, seed=2024 + runs)
    covered = [c.ci_low <= TRUE_RATIO <= c.ci_high for c in report.cells]
    hl = [c.hl_ci_low <= TRUE_RATIO <= c.hl_ci_high for c in report.cells]
    rate, hl_rate = float(np.mean(covered)), float(np.mean(hl))
    print(f"\n{runs} runs a side, {CAMPAIGNS} campaigns: BCa coverage {rate:.1%}, Hodges-Lehmann {hl_rate:.1%}, "
          f"slower verdicts {np.mean([c.verdict == 'slower' for c in report.cells]):.1%}")
    assert len(report.cells) == CAMPAIGNS
    assert rate >= minimum


@pytest.mark.slow
@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_a_a_false_positives(con, correction):
    rng = np.random.default_rng(77)
    cells = [CellSpec(f"aa-{i:03d}", SideSpec(realistic(rng, 1000.0, 20)), SideSpec(realistic(rng, 1000.0, 20)))
             for i in range(CAMPAIGNS)]
    insert_cells(con, cells, seed=77)
    report = compare_campaign(con, "synthetic", correction=correction)
    different = np.mean([c.verdict in ("faster", "slower") for c in report.cells])
    significant = np.mean([c.p_adjusted < 0.05 for c in report.cells])
    flagged = {f: np.mean([f in c.flags for c in report.cells]) for f in ("DRIFT", "BIMODAL", "OUTLIERS")}
    print(f"\nA/A {correction}: called different {different:.1%}, p_adjusted < 0.05 {significant:.1%}, "
          f"flag rates {', '.join(f'{k} {v:.1%}' for k, v in flagged.items())}")
    assert different <= 0.05
    assert significant <= 0.05
    assert flagged["DRIFT"] <= 0.02 and flagged["BIMODAL"] <= 0.02
