"""A run far off does not hide a second group on a tied side (review hR7). A side whose MAD is 0 (more than half its
runs equal: quantized timings, counts) is scored with the mean absolute deviation instead, which the runs in question
inflate: 7 pod runs at 1000 events/s, 2 at 500 and 1 at 2000 scored the two -2.0 and the cell was called "no
detectable difference". stats.outliers.group_z leaves a run alone on its side of the median, and farthest from it,
out of that deviation; counts whose larger values share a side (1, 2, 2, 3) are scored as before, so they do not
become a group. Each case: one cell through the real analyze() and finalize()."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.cell_analysis import analyze, finalize
from podtax_analyzer.celldata import CellData, Side


def _finalized(host: list[float], pod: list[float]):
    cell = CellData("c", "local", "n", "sysbench-cpu", "threads=1", "events_per_second", "events/s", True,
                    Side("host", np.array(host, float), versions=["v"], units=["events/s"]),
                    Side("kubernetes", np.array(pod, float), versions=["v"], units=["events/s"]))
    a = analyze(cell, threshold=0.01, seed=0)
    return finalize(a, a.fields["p_value"], threshold=0.01, correction="holm")


@pytest.mark.parametrize("pod", [[1000] * 8 + [500, 500], [1000] * 7 + [500, 500, 2000]])
def test_on_a_tied_side_a_run_far_off_does_not_hide_a_second_group(pod):
    # fails before group_z for the second pod side: 'no detectable difference', no group
    c = _finalized([1000] * 10, pod)
    assert c.verdict == "inconclusive", (c.flags, c.sentence)
    assert sorted(o.value for o in c.outliers if o.group) == [500, 500], c.outliers
    assert "second group" in c.sentence, c.sentence


@pytest.mark.parametrize("pod", [[1] * 7 + [2, 2, 3], [1] * 7 + [2, 2, 2], [1, 2, 1, 1, 2, 1, 2, 1, 1, 1]])
def test_tied_counts_on_one_side_of_the_median_are_no_second_group(pod):
    c = _finalized([1] * 10, pod)
    assert not any(o.group for o in c.outliers), c.outliers
    assert "second group" not in c.sentence, c.sentence
