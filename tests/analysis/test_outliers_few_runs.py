"""OUTLIERS on sides of 3 or 4 runs (stats/few_runs.py). Scored by the MAD at 3.5 over a 5% floor, clean cells of
10% lognormal noise carried OUTLIERS in 35-41 of 200 at 3 runs a side and 25-30 at 4 ("a run misbehaved", said of
noise), while a throughput run at a tenth of the speed among 3 went unflagged in 50 of 200. Now a run is an outlier
there only when noise cannot explain it (twice or half the others' median, and 3 times their range from it), and a
side left unchecked says so in a note. Tables, then seeded rates."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.cell_analysis import analyze
from podtax_analyzer.celldata import CellData, Side
from podtax_analyzer.stats.few_runs import NOTE
from podtax_analyzer.stats.outliers import outlier_indices


def _cell(host: np.ndarray, pod: np.ndarray) -> CellData:
    return CellData("c", "local", "n", "sysbench-cpu", "threads=1", "events_per_second", "events/s", True,
                    Side("host", np.asarray(host, dtype=float), versions=["v"], units=["events/s"]),
                    Side("kubernetes", np.asarray(pod, dtype=float), versions=["v"], units=["events/s"]))


HOST = [1000.0, 1010, 990, 1005, 1002, 995]  # 6 runs: checked (SMALL_N_WIDEN), no note of its own
CASES = [  # pod runs, the pod runs flagged (indices), the note said
    ([1000.0, 1005, 1250], [], True),  # 25% off beside two close runs: 10% noise does that (the MAD flagged it)
    ([1000.0, 1004, 996, 1300], [], True),  # 30% off among 4 (MAD: z 6.0)
    ([1000.0, 1200, 100], [2], False),  # a tenth of the speed: the MAD of 3 spread runs scored it 3.0, unflagged
    ([1000.0, 1100, 950, 10000], [3], False),  # 10x off among 4: flagged, as before
    ([1000.0, 1050, 330], [2], False),  # a third of the speed
    ([1000.0, 1600, 700, 2100], [], True),  # noisy: 2100 is 2x the others' median but within 3 times their range
    ([1000.0, 1010, 10000, 10100], [], True),  # two pairs 10x apart: BIMODAL, neither pair an outlier (two_strays.py)
]


def _noted(a) -> bool:
    return any(w.startswith(NOTE) for w in a.fields["warnings"])


def _note(a) -> str:
    return next(w for w in a.fields["warnings"] if w.startswith(NOTE))


@pytest.mark.parametrize(("pod", "flagged", "noted"), CASES)
def test_few_runs_table(pod, flagged, noted):
    a = analyze(_cell(HOST, pod), threshold=0.05, seed=1)
    assert [o.value for o in a.fields["outliers"]] == [pod[i] for i in flagged]
    assert ("OUTLIERS" in a.flag_details) is bool(flagged)
    assert _noted(a) is noted  # the unchecked side is said, where the flags are read


def test_the_note_is_only_for_sides_of_3_or_4():
    rng = np.random.default_rng(5)
    for n, noted in ((2, False), (3, True), (4, True), (5, False), (6, False), (10, False)):
        x = 1000 * np.exp(rng.normal(0, 0.02, n))
        assert _noted(analyze(_cell(x, x * 1.01), threshold=0.05, seed=1)) is noted, n


def test_a_side_holding_zero_keeps_the_mad_rule():
    assert list(outlier_indices(np.array([0.0, 1, 1, 9]))) == [3]


@pytest.mark.parametrize("n", [3, 4])
def test_seeded_rates(n):
    """Of 1,000 seeded sides (10% noise): clean ones flagged 0 (MAD: 80-110), a run 3x off (a third or triple)
    found in at least 950, 10x off in all."""
    rng = np.random.default_rng([90, n])
    sides = 1000 * np.exp(rng.normal(0, 0.10, (1000, n)))
    assert sum(len(outlier_indices(x)) > 0 for x in sides) <= 10
    for f in (1 / 3, 3.0, 0.1, 10.0):
        far = sides.copy()
        far[:, 0] *= f
        found = sum(0 in outlier_indices(x) for x in far)
        assert found >= (1000 if f in (0.1, 10.0) else 950), (f, found)


@pytest.mark.parametrize(("pod", "named"), [
    ([0.0, 0, 0, 1000], "pod side: 4 runs"),  # a side holding 0 keeps the MAD rule, flags nothing: still noted
    ([0.0, 0, 1000], "pod side: 3 runs"),
    ([1000.0, 1005, np.nan, 1250], "pod side: 3 of 4 runs measured"),  # the NaN is reported; 3 runs left to check
    ([1000.0, 1005, 1002, np.nan, 1250], "pod side: 4 of 5 runs measured"),
    ([1000.0, 1005, 1250], "pod side: 3 runs"),  # beside a host side of 6: only the pod side is named
])
def test_the_note_names_each_side_too_small_to_check(pod, named):
    note = _note(analyze(_cell(HOST, pod), threshold=0.05, seed=1))
    assert f"needed; {named})" in note and "host side" not in note, note
    assert ("holding 0 or less (pod)" in note) is (min(pod) == 0), note  # the MAD rule is said where it applies


def test_the_note_names_both_sides():
    note = _note(analyze(_cell([1000.0, 1010, 990], [1000.0, 1005, 1250, 1001]), threshold=0.05, seed=1))
    assert "(at least 5 a side are needed; host side: 3 runs, pod side: 4 runs)" in note, note


@pytest.mark.parametrize(("host", "pod", "score"), [
    (HOST, [1000.0, 1200, 100], "outlier score above 3.5"),  # 3 runs: the others' median and range
    (HOST, [1000.0, 1010, 990, 1005, 1002, 100], "outlier score above 3.5"),  # 6 runs: generalized ESD on logs
    (HOST * 2, [1000.0, 1010, 990, 1005, 1002, 995, 1001, 998, 1003, 997, 100], "modified z-score above 6"),
])
def test_the_flag_names_the_score_it_used(host, pod, score):
    """The flag said "modified z-score" of every side; below 10 runs a side is scored on log values otherwise."""
    text = analyze(_cell(host, pod), threshold=0.05, seed=1).flag_details["OUTLIERS"]
    assert f"({score})" in text, text
