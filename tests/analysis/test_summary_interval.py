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
