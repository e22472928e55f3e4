"""Every number in a summary sentence comes from the table rows it cites.

A number is accepted when it is (a) a field of a cited cell formatted as the table formats it, or a
number inside a cited cell's text fields (node, test, params, metric, unit), (b) a count of cited
cells, or (c) the geometric mean of the cited clean cells' ratios, recomputed here from the rows
(or that mean's percentage).
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
