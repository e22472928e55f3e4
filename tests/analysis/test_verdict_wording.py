"""The words of a cell's verdict, flags and legend agree with each other (an audit found "inconclusive"
beside "(no verdict)" and "not comparable" for one cell, "with 0 runs on a side", "no verdict (no
verdict)", "ratio = — (one side only) with its 95% CI" and "CPU limit 1 cores"). Table-driven over the
wording functions, and cells fed through the real analysis."""

from __future__ import annotations

import numpy as np
import pytest
from podtax.cli.report_render import VERDICT_STYLE
from podtax.flags import BLOCKING, LEGEND
from podtax_analyzer import flags as fl
from podtax_analyzer import outlier_flags
from podtax_analyzer.cell_analysis import analyze, finalize
from podtax_analyzer.celldata import CellData, Side
from podtax_analyzer.report_models import CellComparison
from podtax_analyzer.stats.verdict import VERDICTS
from podtax_analyzer.summary import summarize

STEADY = np.linspace(1000.0, 1010.0, 8)


def _cell(host: np.ndarray, pod: np.ndarray, *, candidate: str = "kubernetes", **pod_side) -> CellData:
    return CellData("c", "local", "node-1", "sysbench-cpu", "threads=1", "events_per_second", "events/s", True,
                    Side("host", host, ["1.0.20"] if len(host) else []),
                    Side(candidate, pod, ["1.0.20"] if len(pod) else [], **pod_side), "host", candidate)


def _final(cell: CellData) -> CellComparison:
    a = analyze(cell, threshold=0.01, seed=0)
    return finalize(a, a.fields["p_value"], threshold=0.01, correction="holm")


@pytest.mark.parametrize("host,pod,candidate,sentence", [
    (STEADY, np.array([]), "kubernetes",
     "Not comparable: host has 8 runs and pod 0 runs; a ratio needs runs on both sides."),
    (np.array([]), STEADY, "kubernetes",
     "Not comparable: host has 0 runs and pod 8 runs; a ratio needs runs on both sides."),
    (STEADY, np.array([]), "",
     "Not comparable: one side only: host median 1005 events/s over 8 runs; compare two campaigns with "
     "`podtax compare`."),
])
def test_a_cell_without_two_sides_is_not_comparable_everywhere(host, pod, candidate, sentence):
    c = _final(_cell(host, pod, candidate=candidate))
    assert c.verdict == "not comparable" and c.sentence == sentence
    (item,) = summarize([c])
    assert "not comparable" in item.nodes_excluded["node-1"]


def test_a_cell_with_two_sides_keeps_its_verdict():
    c = _final(_cell(STEADY, STEADY * 0.5))
    assert c.verdict == "slower" and c.sentence.startswith("Pod 50.0% slower")


@pytest.mark.parametrize("host,pod,want", [
    # one far value on the host; the pod side has no runs: the sentence counts the host's runs, never 0
    (np.r_[STEADY[:5], 2000.0], np.array([]), "with 6 runs on a side even medians"),
    (np.r_[STEADY[:5], 2000.0], STEADY[:3], "with 3 runs on a side even medians"),
    (np.r_[STEADY[:5], 2000.0], STEADY[:1], "with 1 run on a side even medians"),
    (np.r_[np.linspace(1000, 1010, 11), 2000.0], np.linspace(1000, 1010, 12), "medians and rank tests resist them"),
])
def test_outliers_count_the_runs_of_the_sides_that_have_any(host, pod, want):
    cell = _cell(host, pod)
    text = outlier_flags.outliers(cell, {"host": np.array([len(host) - 1]), "kubernetes": np.array([], int)},
                       {"host": np.full(len(host), 3.5)})
    assert want in text and "0 runs" not in text


@pytest.mark.parametrize("limits,want", [([1.0], "1 core"), ([0.5], "0.5 cores"), ([0.5, 2.0], "0.5 / 2 cores"),
                                         ([2.0], "2 cores")])
def test_cpu_limits_in_words(limits, want):
    assert fl.cores(limits) == want
    text = fl.throttled(_cell(STEADY, STEADY, n_throttled=2, throttled_usec=3_000_000, cpu_limits=limits))
    assert f"CPU limit {want})" in text


@pytest.mark.parametrize("name", sorted(BLOCKING))
def test_a_blocking_flag_legend_does_not_say_no_verdict_itself(name):
    # the report appends " (no verdict)" to every blocking flag's legend
    assert "no verdict" not in LEGEND[name] and "withheld" not in LEGEND[name]


def test_every_verdict_has_a_style():
    assert set(VERDICTS) == set(VERDICT_STYLE)
