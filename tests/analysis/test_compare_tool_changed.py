"""`podtax compare` across a tool build change (audit 9b): campaign "a" ran sysbench 1.0.20 and "b" 1.0.18 on both
sides; the comparison said nothing, so a difference the new build made read as the platform's. Now every compared
row whose environments' builds changed carries NEW:TOOL_CHANGED, named in its details and its sentence (the CLI
table, the HTML report and the JSON all print those), withholding nothing: a ratio's sides changed builds alike, and a
control-plane cell's version is its backend's, whose change may be the point (said so). Real DuckDB file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.campaign_compare import compare_campaigns
from podtax_analyzer.html_report import compare_section
from podtax_analyzer.store import Store

from tests.report.conftest import serve

RNG = np.random.default_rng(7)


def _ln(m: float) -> np.ndarray:
    return m * np.exp(RNG.normal(0, 0.01, 10))


def _cells(campaign: str, scale: float, version: str) -> list[CellSpec]:
    return [CellSpec("n1", SideSpec(_ln(1000 * scale), tool_version=version),
                     SideSpec(_ln(900 * scale), tool_version=version), campaign=campaign),
            CellSpec("n3", SideSpec(np.array([])), SideSpec(_ln(100 * scale), tool_version=version),
                     campaign=campaign, test="pod-startup", metric="ready_p50", unit="ms", higher_is_better=False,
                     tool="pod-startup", params={"count": 10})]


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("tools") / "podtax.duckdb")
    c = store.cursor()
    insert_cells(c, _cells("a", 1.0, "1.0.20"))
    insert_cells(c, _cells("b", 0.7, "1.0.18"))
    insert_cells(c, _cells("c", 0.7, "1.0.20"))
    yield store
    store.close()


def _rows(store, base: str, new: str) -> dict:
    return {r.node: r for r in compare_campaigns(store.cursor(), base, new).cells}


def test_a_tool_build_change_is_said_on_every_compared_row(con):
    rows = _rows(con, "a", "b")
    for node, words in (("n1", "may be the tool's, not the platform's"), ("n3", "the difference includes that")):
        row = rows[node]
        assert "NEW:TOOL_CHANGED" in row.flags, (node, row.flags)
        assert "1.0.20 in a and" in row.flag_details["NEW:TOOL_CHANGED"] and "1.0.18 in b" in row.sentence
        assert words in row.sentence, row.sentence
    # both sides changed alike: said once
    assert "host and kubernetes runs used sysbench 1.0.20 in a and sysbench 1.0.18 in b" in rows["n1"].sentence
    html = compare_section(compare_campaigns(con.cursor(), "a", "b"))
    assert html.count("NEW:TOOL_CHANGED") >= 2 and "1.0.18 in b" in html


def test_it_withholds_no_verdict(con):
    rows = _rows(con, "a", "b")
    assert rows["n3"].verdict == "improved"  # a 30% shorter startup: the backend's change, told as such
    assert rows["n1"].verdict == _rows(con, "a", "c")["n1"].verdict  # the ratio's verdict as on one build


def test_the_same_build_says_nothing(con):
    rows = _rows(con, "a", "c")
    assert all("NEW:TOOL_CHANGED" not in r.flags and "build" not in r.sentence for r in rows.values())
    assert rows["n3"].verdict == "improved"


def test_the_cli_says_it_in_its_table_and_json(con, capsys):
    with serve(create_app(con)) as url:
        assert main(["compare", "a", "b", "--api", url, "--all-metrics"]) == 0
        table = capsys.readouterr().out
        assert main(["compare", "a", "b", "--api", url, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
    said = " ".join(table.split())  # the terminal folds long cells and lines
    assert "NEW:TOOL_CHANGE" in said and "The tool build changed between the campaigns" in said, table
    assert "The backend's build changed between the campaigns" in said, table
    assert all("NEW:TOOL_CHANGED" in c["flags"] and "1.0.18 in b" in c["sentence"] for c in data["cells"]), data
