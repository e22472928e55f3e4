"""Every number in a summary sentence comes from the table rows it cites.

A number is accepted when it is (a) a field of a cited cell formatted as the table formats it, or a
number inside a cited cell's text fields (node, test, params, metric, unit), (b) a count of cited
cells, or (c) the geometric mean of the cited clean cells' ratios, recomputed here from the rows
(or that mean's percentage), or the ends of its interval: the geometric means of their interval ends.
"""

from __future__ import annotations

import math
import re

import numpy as np
from analysis_synth import CellSpec, SideSpec, fixture_campaign, insert_cells, lognormal
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.summary import is_clean
from podtax_analyzer.wording import fmt_pct, fmt_ratio, fmt_value

NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _allowed(cells) -> set[str]:
    ok: set[str] = {str(i) for i in range(len(cells) + 1)}
    for c in cells:
        for text in (c.node, c.test, c.params, c.metric, c.unit):
            ok.update(NUMBER.findall(text))
        ok.update({str(c.n_host), str(c.n_pod)})
        for v in (c.ratio, c.ci_low, c.ci_high):
            if v is not None:
                ok.add(fmt_ratio(v))
        for v in (c.host_median, c.pod_median):
            if v is not None:
                ok.add(fmt_value(v))
        if c.ratio is not None:
            ok.add(fmt_pct(c.ratio - 1))
    clean = [c for c in cells if is_clean(c)]
    if clean:
        g = math.exp(sum(math.log(c.ratio) for c in clean) / len(clean))
        ok.update({fmt_ratio(g), fmt_pct(g - 1)})
        for ends in ([c.ci_low for c in clean], [c.ci_high for c in clean]):
            ok.add(fmt_ratio(math.exp(sum(math.log(v) for v in ends) / len(ends))))
    return ok


def _check(report):
    by_id = {c.id: c for c in report.cells}
    assert report.summary
    for s in report.summary:
        cited = [by_id[i] for i in s.cells]
        allowed = _allowed(cited)
        for num in NUMBER.findall(s.sentence):
            assert num in allowed, f"{num!r} in {s.sentence!r} is not in the cited rows"
        for node in s.nodes_included + list(s.nodes_excluded):
            assert node in s.sentence
    cited_all = {i for s in report.summary for i in s.cells}
    assert cited_all == set(by_id)


def test_summary_numbers_come_from_the_table(con):
    insert_cells(con, fixture_campaign())
    _check(compare_campaign(con, "synthetic"))


def test_summary_numbers_many_nodes(con):
    rng = np.random.default_rng(11)
    cells = [CellSpec(f"worker-{i}.example.com", SideSpec(lognormal(rng, 2000, 0.01, 12)),
                      SideSpec(lognormal(rng, 2000 * rng.uniform(0.9, 1.02), 0.01, 12))) for i in range(12)]
    cells[3].host.tool_version = "0.9"
    cells[5].pod.values = cells[5].pod.values[:3]
    insert_cells(con, cells)
    report = compare_campaign(con, "synthetic")
    _check(report)
    s = report.summary[0]
    assert "worker-3.example.com (CONFOUNDED)" in s.sentence
    assert "worker-5.example.com (INSUFFICIENT" in s.sentence
    included = [c for c in report.cells if c.node in s.nodes_included]
    assert s.geomean_ratio == math.exp(np.mean([math.log(c.ratio) for c in included]))


def test_no_clean_cell_gives_no_figure(con):
    rng = np.random.default_rng(12)
    insert_cells(con, [CellSpec("n1", SideSpec(lognormal(rng, 10, 0.01, 3)), SideSpec(lognormal(rng, 10, 0.01, 3)))])
    s = compare_campaign(con, "synthetic").summary[0]
    assert s.geomean_ratio is None and "no clean cell" in s.sentence and s.nodes_excluded == {"n1": ["INSUFFICIENT"]}


def test_no_node_is_wide_beside_intervals_of_width_0(con):
    """Three nodes whose runs all gave one value (interval 1.000 to 1.000, width 0) and one steady node
    (interval within ±1%): 4 times a median width of 0 is 0, so the steady node was called "over 4 times as
    wide" as the others. The others' width now counts as at least the no-difference band's."""
    flat = np.full(10, 1000.0)
    steady = np.linspace(1000.0, 1010.0, 10)
    cells = [CellSpec(f"n{i}", SideSpec(flat.copy()), SideSpec(flat.copy())) for i in (1, 2, 3)]
    cells.append(CellSpec("n4", SideSpec(steady), SideSpec(steady * 0.998)))
    insert_cells(con, cells)
    report = compare_campaign(con, "synthetic")
    _check(report)
    (s,) = report.summary
    n4 = next(c for c in report.cells if c.node == "n4")
    assert s.nodes_included == ["n1", "n2", "n3", "n4"] and n4.ci_high - n4.ci_low < 0.02
    assert "times as wide" not in s.sentence, s.sentence
