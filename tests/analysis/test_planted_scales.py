"""Planted cells of known truth swept over shapes (review s48 hG): the same 10% pod tax, or none, on a throughput
(higher is better) and on a latency (lower is better), at 1e-9 to 1e12 of the unit, on sides of identical runs and
on one constant side beside a noisy one, through a real DuckDB file and compare_campaign. Each cell's verdict, its
direction word and the word its sentence opens with must agree with the truth; no effect is never a verdict.
(Seeded sweeps of these shapes, 40 cells x 3 seeds each, gave no wrong direction and no claim beyond the test's
alpha; this pins the deterministic cases.)"""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells
from podtax_analyzer.comparisons import compare_campaign

NOISE = np.array([1.0, 1.004, 0.996, 1.002, 0.998, 1.001, 0.999, 1.003, 0.997, 1.0])  # +-0.4%, 10 runs
THROUGHPUT = dict(metric="events_per_sec", unit="events/s", higher_is_better=True)
LATENCY = dict(metric="latency_ms", unit="ms", higher_is_better=False)


def _verdict(con, host, pod, kind: dict):
    insert_cells(con, [CellSpec("node-a", SideSpec(np.asarray(host, float)), SideSpec(np.asarray(pod, float)),
                                **kind)])
    (c,) = compare_campaign(con, "synthetic").cells
    return c


@pytest.mark.parametrize("scale", [1e-9, 1e-3, 1.0, 1e12])
@pytest.mark.parametrize(("kind", "pod_factor", "truth"), [
    (THROUGHPUT, 0.9, "slower"),  # fewer events/s in the pod: the pod tax
    (THROUGHPUT, 1.1, "faster"),
    (LATENCY, 1.1, "slower"),  # a longer latency in the pod: the same tax, the other way in value
    (LATENCY, 0.9, "faster"),
])
def test_the_direction_word_follows_the_metric_at_any_scale(con, scale, kind, pod_factor, truth):
    c = _verdict(con, scale * NOISE, scale * pod_factor * NOISE[::-1], kind)
    assert (c.verdict, c.direction) == (truth, truth), c.sentence
    assert c.sentence.startswith(f"Pod {abs(c.change_pct):.1f}% {truth} than host"), c.sentence
    assert (c.change_pct > 0) is (pod_factor > 1), c.change_pct  # the value's own direction


@pytest.mark.parametrize("scale", [1e-9, 1.0, 1e12])
@pytest.mark.parametrize("kind", [THROUGHPUT, LATENCY])
def test_no_planted_effect_is_never_a_verdict(con, scale, kind):
    assert _verdict(con, scale * NOISE, scale * NOISE[::-1], kind).verdict not in ("faster", "slower")


@pytest.mark.parametrize(("host", "pod", "kind", "verdicts"), [
    ([5.0] * 10, [5.0] * 10, THROUGHPUT, {"no detectable difference"}),  # identical runs, counters
    ([1000.0] * 10, [995.0] * 10, THROUGHPUT, {"no detectable difference"}),  # 0.5%: inside the 1% band
    ([1000.0] * 10, [900.0] * 10, THROUGHPUT, {"slower"}),
    ([100.0] * 10, [110.0] * 10, LATENCY, {"slower"}),
    ([1e12] * 10, [0.98e12] * 10, THROUGHPUT, {"slower"}),
    ([1000.0] * 10, list(1000 * NOISE * NOISE), THROUGHPUT, {"no detectable difference", "inconclusive"}),
    (list(1000 * NOISE), [1000.0] * 10, LATENCY, {"no detectable difference", "inconclusive"}),
    ([100.0] * 10, list(110 * NOISE), LATENCY, {"slower"}),  # one side constant, the other noisy and 10% longer
])
def test_sides_of_identical_runs(con, host, pod, kind, verdicts):
    c = _verdict(con, host, pod, kind)
    assert c.verdict in verdicts, c.sentence
