"""A negative median gives no ratio. A result event may carry a negative value (event_payloads.Metric.value is any
float; the parsers refuse them, other producers need not): a host median of +1.0 ms beside a pod median of -1.0 ms
gave the ratio -1.001 with the interval -1.191 to -0.866 and the sentence 'Pod 200.1% faster than host', figures that
measure nothing. A negative host median already gave no ratio; now a negative pod median gives none either, and the
cell says both medians. Planted through the real store (analysis_synth.insert_cells) and compare_campaign."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.stats.bootstrap import bca_ratio_of_medians


# the last two: medians positive (+0.03, +0.2) among negative runs (review r1: "Pod 96.8% faster", CI -0.113 to 0.099)
@pytest.mark.parametrize(("host", "pod"), [(1.0, -1.0), (-1.0, 1.0), (-5.0, -10.0), (1.0, 0.1), (1.0, 0.2)])
def test_a_negative_median_gives_no_ratio(con, host, pod):
    rng = np.random.default_rng(5)
    sides = SideSpec(host + rng.normal(0, 0.2, 20)), SideSpec(pod + rng.normal(0, 0.2, 20))
    insert_cells(con, [CellSpec("node-a", *sides, metric="offset_ms", unit="ms", higher_is_better=False)])
    c = compare_campaign(con, "synthetic").cells[0]
    assert c.ratio is None and c.ci_low is None and c.ci_high is None and c.verdict == "inconclusive", c
    assert "%" not in c.sentence and "no ratio could be computed" in c.sentence, c.sentence


def test_the_bootstrap_forms_no_ratio_of_a_negative_pod_median():
    r = bca_ratio_of_medians(np.array([1.0, 1.1, 0.9]), np.array([-1.0, -1.1, -0.9]), rng=np.random.default_rng(0))
    assert r.estimate is None and r.low is None and "negative" in r.warnings[0]
    some = bca_ratio_of_medians(np.array([1.0, 1.1, 0.9]), np.array([-0.1, 0.2, 0.3]), rng=np.random.default_rng(0))
    assert some.estimate is None and some.warnings == ("a pod value is negative, so a ratio of medians measures no "
                                                       "change",)
