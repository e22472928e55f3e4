"""The cross-node geometric mean is given with its interval and states a change only when it shows one.

Before, the summary stated the mean of the clean cells' point ratios with its change: with no effect planted
and one noisy node of 4 (its ratio 0.906 by chance, interval 0.760 to 1.199) it read "is 0.975 (pod 2.5%
slower)" while no cell claimed anything (hG's planted sweep: 21 of 30 campaigns read >= 1% either way). Now
the mean carries [geomean(ci_low), geomean(ci_high)] of the clean cells and the change only when that interval
lies beyond the no-difference band and a clean node's own verdict says the same.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.summary import geomean, is_clean, summarize
from podtax_analyzer.wording import fmt_ratio

STEADY, NOISY = 0.01, 0.3
MEAN = re.compile(r"the geometric mean of the pod/host ratios is ([0-9.]+) \(([0-9.]+) to ([0-9.]+)(?:\)|, )")
CHANGE = re.compile(r"pod [0-9.]+% (?:slower|faster)")


def _cells(seed: int, effect: float, cvs: list[float]) -> list[CellSpec]:
    rng = np.random.default_rng(seed)
    return [CellSpec(f"node-{i + 1}", SideSpec(lognormal(rng, 1000, cv, 10)),
                     SideSpec(lognormal(rng, 1000 * effect, cv, 10))) for i, cv in enumerate(cvs)]


# (case, seed, planted pod/host ratio, each node's spread, the mean's change, what the sentence says of it)
CASES = [
    ("no effect, one noisy node of 4", 1, 1.0, [STEADY] * 3 + [NOISY], None,
     "): no difference across nodes can be claimed"),
    ("10% tax on 4 steady nodes", 1, 0.9, [STEADY] * 4, "slower", ", pod 10.2% slower)"),
    ("no effect on 4 very steady nodes", 1, 1.0, [0.003] * 4, "within",
     "): any difference across nodes is smaller than the practical threshold"),
    ("10% tax, one noisy node of 4", 2, 0.9, [STEADY] * 3 + [NOISY], None,
     "): no difference across nodes can be claimed"),
]


@pytest.mark.parametrize(("seed", "effect", "cvs", "change", "said"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_the_mean_says_a_change_only_with_an_interval_that_shows_it(con, seed, effect, cvs, change, said):
    insert_cells(con, _cells(seed, effect, cvs))
    report = compare_campaign(con, "synthetic")
    (s,) = report.summary
    clean = [c for c in report.cells if is_clean(c)]
    assert len(clean) == 4, s.sentence
    lo, hi = geomean([c.ci_low for c in clean]), geomean([c.ci_high for c in clean])
    head = s.sentence.split("; per node")[0]
    m = MEAN.search(head)
    assert m, s.sentence
    assert m.groups() == (fmt_ratio(s.geomean_ratio), fmt_ratio(lo), fmt_ratio(hi)), s.sentence
    assert said in head, s.sentence
    if change is None:  # the figure is still there, but no "pod X% slower" beside it
        assert not CHANGE.search(head), s.sentence
    else:
        assert lo <= effect <= hi, s.sentence
    assert (s.geomean_ci_low, s.geomean_ci_high, s.geomean_change) == (pytest.approx(lo), pytest.approx(hi), change)
    if NOISY in cvs and effect != 1.0:  # without the noisy node the 10% tax is stated, with its interval
        assert re.search(r"without it the geometric mean is 0\.\d{3} \(0\.\d{3} to 0\.\d{3}, pod \d+\.\d% slower\)\.",
                         s.sentence), s.sentence


def test_no_change_is_said_when_no_clean_node_claims_one(con):
    """An interval beyond the band but no clean node's own verdict saying so (each cell withheld, e.g. by its
    rank test): the mean does not claim what no node claims."""
    insert_cells(con, _cells(1, 0.9, [STEADY] * 4))
    cells = [c.model_copy(update={"verdict": "inconclusive"}) for c in compare_campaign(con, "synthetic").cells]
    (s,) = summarize(cells)
    assert s.geomean_change is None and "no difference across nodes can be claimed" in s.sentence, s.sentence
    assert not CHANGE.search(s.sentence), s.sentence


def test_the_mean_is_not_within_the_band_when_a_clean_node_claims_a_change(con):
    """A mean interval inside the band while a clean node's own verdict says slower: "any difference across nodes
    is smaller than the practical threshold" would contradict that node's sentence (review r8)."""
    insert_cells(con, _cells(1, 1.0, [0.003] * 4))
    cells = compare_campaign(con, "synthetic").cells
    assert summarize(cells)[0].geomean_change == "within"  # as the CASES row: the band holds the mean's interval
    cells = [cells[0].model_copy(update={"verdict": "slower"}), *cells[1:]]
    (s,) = summarize(cells)
    assert s.geomean_change is None and "no difference across nodes can be claimed" in s.sentence, s.sentence
    assert "smaller than the practical threshold" not in s.sentence, s.sentence


# (case, each node's planted pod/host ratio, spread, runs per side): two clean nodes' intervals do not overlap
DISAGREE = [
    ("one node 1.5% slower, three 0.4% faster (mean inside the band)", [0.985, 1.004, 1.004, 1.004], 0.002, 20),
    ("one node 20% slower, two equal (mean beyond the band)", [0.8, 1.0, 1.0], STEADY, 10),
]


@pytest.mark.parametrize(("effects", "cv", "runs"), [c[1:] for c in DISAGREE], ids=[c[0] for c in DISAGREE])
def test_nodes_that_disagree_give_a_mean_with_no_change(con, effects, cv, runs):
    """When the nodes disagree the mean describes none of them: it keeps its figure and interval but states no
    change ("pod 7.2% slower", "smaller than the practical threshold") and geomean_change is null (review r8)."""
    rng = np.random.default_rng(1)
    insert_cells(con, [CellSpec(f"node-{i + 1}", SideSpec(lognormal(rng, 1000, cv, runs)),
                                SideSpec(lognormal(rng, 1000 * e, cv, runs))) for i, e in enumerate(effects)])
    (s,) = compare_campaign(con, "synthetic").summary
    assert s.nodes_disagree and "describes none of them" in s.sentence, s.sentence
    m = MEAN.search(s.sentence)
    assert m and m.groups() == tuple(fmt_ratio(v) for v in (s.geomean_ratio, s.geomean_ci_low, s.geomean_ci_high))
    assert s.geomean_change is None, s.sentence
    assert not CHANGE.search(s.sentence) and "smaller than the practical threshold" not in s.sentence, s.sentence
