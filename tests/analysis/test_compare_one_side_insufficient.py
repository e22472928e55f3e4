"""`podtax compare` of two Kubernetes-only volume-churn campaigns (no Nomad runs), NEW's volumes planted 20% slower in
every phase, 8 runs each. The compared figure is the kubernetes median, yet each campaign's own INSUFFICIENT flag
(of its nomad/kubernetes ratio: "kubernetes has 8 and nomad 0 ... 6 more nomad runs are needed") withheld the
verdict of provisioned and pv_deleted, the phases Nomad shares: "Inconclusive (flags BASE:INSUFFICIENT,
NEW:INSUFFICIENT withhold the verdict): kubernetes median (ms) 215.4 ms in base, 253.4 ms in new (difference +37.95
ms, 95% CI +30.51 to +46.86; new/base 1.176, p = 0.0067 adjusted)", while bound (no Nomad phase, no such flag) said
worsened (1.185). Now a one-side comparison leaves the campaigns' INSUFFICIENT out: its own side's run
count (fewer than 6: point figures only) is what decides. Real parser, real DuckDB file."""

from __future__ import annotations

import pytest
from podtax_analyzer.campaign_compare import compare_campaigns
from podtax_analyzer.store import Store
from timeline_synth import run_events


def _cells(path, runs_new: int) -> dict:
    s = Store(path)
    batch = []
    for seq in range(8):
        batch += run_events("base", "kubernetes", "volume-churn", seq, count=50)
    for seq in range(runs_new):  # after BASE's runs: no overlap on the node
        batch += run_events("new", "kubernetes", "volume-churn", 100 + seq, count=50, scale=1.2)
    s.write_batch(batch)
    try:
        return {c.metric: c for c in compare_campaigns(s.cursor(), "base", "new").cells}
    finally:
        s.close()


@pytest.mark.parametrize("metric", ["provisioned_p50_ms", "pv_deleted_p50_ms", "bound_p50_ms"])
def test_a_kubernetes_only_change_is_found_in_every_phase(tmp_path, metric):
    c = _cells(tmp_path / "podtax.duckdb", 8)[metric]
    assert c.compared == "kubernetes median (ms)"
    assert not any(f.endswith("INSUFFICIENT") for f in c.flags), c.flags
    assert c.verdict == "worsened", c.sentence
    assert c.change_ci_low < 1.2 < c.change_ci_high


def test_too_few_runs_of_the_compared_side_still_give_no_verdict(tmp_path):
    c = _cells(tmp_path / "podtax.duckdb", 3)["provisioned_p50_ms"]
    assert c.verdict == "inconclusive" and c.change_ci_low is None
    assert c.sentence.startswith("Inconclusive (too few runs: new has 3 kubernetes runs")
