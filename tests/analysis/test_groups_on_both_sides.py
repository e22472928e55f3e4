"""A second group on each side of a cell is said for both sides. 16 host runs at 1000 and 4 at 500, beside 18 pod runs
at 1000 and 2 at 1500, were called 'Within +-1.0% (equivalent at this threshold)' with no flag: the pod's two values,
each held twice, were taken for the step of the scale (500), so the host's group lay 'one step' from its other runs,
and the host's two values hid the pod's group the same way. With 2 pod runs at 1600 the pod's group was said and the
host's (a fifth of its runs at half speed) hidden, as only one side's group could be said. Planted cells through the
real store (analysis_synth.insert_cells) and compare_campaign, and the summary."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.stats.outliers import scale_step
from podtax_analyzer.summary import is_clean


def _report(con, host: list[float], pod: list[float]):
    insert_cells(con, [CellSpec("node-a", SideSpec(np.array(host, float)), SideSpec(np.array(pod, float)))])
    return compare_campaign(con, "synthetic")


@pytest.mark.parametrize(("host", "pod"), [
    ([1000] * 16 + [500] * 4, [1000] * 18 + [1500] * 2),  # was 'equivalent', no flag
    ([1000] * 16 + [500] * 4, [1000] * 18 + [1600] * 2),  # the pod's group said, the host's hidden
    ([1000] * 8 + [500] * 2, [1000] * 8 + [1500] * 2),  # neither said
])
def test_a_group_on_each_side_is_said_for_both(con, host, pod):
    report = _report(con, host, pod)
    c = report.cells[0]
    grouped = {(o.env, o.value) for o in c.outliers if o.group}
    assert {env for env, _ in grouped} == {"host", "kubernetes"}, c.outliers
    assert {v for env, v in grouped if env == "host"} == {v for v in host if v < 900}
    assert {v for env, v in grouped if env == "kubernetes"} == {v for v in pod if v > 1100}
    assert c.verdict == "inconclusive" and "equivalent at this threshold" not in c.sentence
    low, high = sum(v < 900 for v in host), sum(v > 1100 for v in pod)
    for text in (c.sentence, c.flag_details["OUTLIERS"]):
        assert f"{low} of {len(host)} host runs" in text and f"{high} of {len(pod)} pod runs" in text, text
        assert text.index("host runs") < text.index("pod runs")  # the baseline first
    assert "each side's runs lie together and on one side of its median" in c.flag_details["OUTLIERS"]
    assert not is_clean(c)  # the summary's mean leaves it out, saying why
    assert any("second group" in r for s in report.summary for rs in s.nodes_excluded.values() for r in rs), \
        report.summary


def test_one_sides_group_is_still_said_alone(con):
    c = _report(con, [1000] * 16 + [500] * 4, [1000] * 20).cells[0]
    assert {o.env for o in c.outliers if o.group} == {"host"} and "pod runs" not in c.flag_details["OUTLIERS"]


@pytest.mark.parametrize(("rest", "other", "step"), [
    ([1000] * 16, [1000] * 18 + [1500] * 2, 1.0),  # the other side's two values: two groups, no step
    ([1000] * 16, [1000] * 16 + [1500] * 2 + [2000] * 2, 500.0),  # three values, each twice: a scale
    ([0.5, 0.5, 0.75, 0.75], [], 0.25),  # the side's own two values, each twice: its step
])
def test_the_other_sides_two_values_are_no_step(rest, other, step):
    assert scale_step(np.array(rest, float), np.array(other, float)) == pytest.approx(step)
