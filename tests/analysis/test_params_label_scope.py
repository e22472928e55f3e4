"""Labels leave out a param only when it is empty in every cell of its test (podtax.param_labels).

Volume-churn campaigns read 'volume-churn count=20 namespace= plugin_id= ...' in every label (pU, session 53). A
first fix dropped every empty param and was reverted (0e1c01af): 'tag= threads=4' (20% slower) and 'threads=4' (no
difference) then read alike. Now a param is left out only when every cell of the test shown has it empty: the
volume-churn labels lose 'namespace= plugin_id=' in the summary sentences and failed-run warnings, the text report
and its phase table, the HTML report, the workbook's matrix and podtax compare, while two cells that differ only by
an empty and an absent param still read apart. The params key (--json, the API, the data tables) keeps every param.
Real parser output in a real DuckDB file, the real CLI and renderers."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import openpyxl
import pytest
from podtax import events, templates
from podtax.cli.compare import print_change
from podtax.cli.main import main
from podtax_analyzer.campaign_compare import compare_campaigns
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.html_report import render_html
from podtax_analyzer.report_data import load_report_data
from podtax_analyzer.store import Store
from podtax_analyzer.workbook import write_workbook
from timeline_synth import run_events

EMPTY = {"namespace": "", "plugin_id": ""}
TAGGED = {**EMPTY, "tag": ""}  # 'tag=' here, no tag at all in the other cell


def _failed(campaign: str, params: dict) -> events.RunFailedV1:
    run = events.RunSpec(run_id=f"{campaign}-failed", campaign=campaign, node="node-1", env="nomad",
                         test="volume-churn", params={"count": 20, **params}, sequence=99)
    now = datetime.now(UTC)
    return events.run_failed(events.RunFailed(run=run, stage="agent", reason="timeout", detail="x",
                                              started_at=now, ended_at=now), "tests")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Campaign 'p': volume-churn cells all with namespace= and plugin_id= empty, and a failed run. Campaigns 'q'
    and 'r': the same test twice on one node, once with 'tag=' and once without a tag ('q' has both, 'r' one).
    Campaign 's': cells with namespace= and plugin_id= empty and a failed run without them; 't' the cells of 's',
    'u' those and cells without them (review r1 of 3d9c3c3e: two scopes made two cells read alike), 'x' the cells
    of 'u' again. Campaign 'v': a value with a space before a `k=`; 'w': every param empty."""
    path = tmp_path_factory.mktemp("labels") / "podtax.duckdb"
    s = Store(path)
    try:
        batch: list = [_failed("p", EMPTY), _failed("s", {})]
        for seq in range(6):  # run ids apart by seq: campaign-env-test-seq
            for campaign, params, first in (("p", EMPTY, 0), ("q", EMPTY, 0), ("q", TAGGED, 200), ("r", EMPTY, 0),
                                            ("s", EMPTY, 0), ("t", EMPTY, 0), ("u", EMPTY, 0), ("u", {}, 200),
                                            ("v", {**EMPTY, "xy": "é =ü b="}, 0), ("w", {**EMPTY, "count": ""}, 0),
                                            ("x", EMPTY, 0), ("x", {}, 200)):
                batch += run_events(campaign, "kubernetes", "volume-churn", first + seq, params=params)
                batch += run_events(campaign, "nomad", "volume-churn", first + 100 + seq, params=params)
        s.write_batch(batch)
    finally:
        s.close()
    return path


def test_params_labels_leave_out_only_params_empty_in_every_cell_of_the_test() -> None:
    from podtax.param_labels import params_labels  # here: the file's other tests run against older code too
    churn = templates.params_key({"count": 5, **EMPTY, "size": "1Gi"})
    assert churn == "count=5 namespace= plugin_id= size=1Gi"
    other = templates.params_key({"count": 9, **EMPTY, "size": "1Gi"})
    assert params_labels([("volume-churn", churn), ("volume-churn", other)]) == {
        "volume-churn": {churn: "count=5 size=1Gi", other: "count=9 size=1Gi"}}
    # empty in one cell, absent from the other (0e1c01af): both keep what tells them apart
    assert params_labels([("sysbench-cpu", "tag= threads=4"), ("sysbench-cpu", "threads=4")]) == {
        "sysbench-cpu": {"tag= threads=4": "tag= threads=4", "threads=4": "threads=4"}}
    # empty in one cell, set in the other: kept; another test's cells do not count
    got = params_labels([("volume-churn", "count=5 namespace="), ("volume-churn", "count=5 namespace=x"),
                         ("sysbench-cpu", "count=5 threads=")])
    assert got == {"volume-churn": {"count=5 namespace=": "count=5 namespace=", "count=5 namespace=x":
                                    "count=5 namespace=x"}, "sysbench-cpu": {"count=5 threads=": "count=5"}}
    assert params_labels([("volume-churn", "namespace=")]) == {"volume-churn": {"namespace=": ""}}
    # only a param of the test's template is left out (review r1 of 3d9c3c3e: a value 'é =ü b=' lost its 'b=')
    key = templates.params_key({"count": 20, **EMPTY, "xy": "é =ü b="})
    assert params_labels([("volume-churn", key)]) == {"volume-churn": {key: "count=20 xy=é =ü b="}}
    assert params_labels([("imported-tool", "a= b=1")]) == {"imported-tool": {"a= b=1": "a= b=1"}}


def _said(texts: list[str]) -> list[str]:
    return [t for t in texts if "namespace=" in t or "plugin_id=" in t]


def test_volume_churn_labels_lose_namespace_and_plugin_id_everywhere(db: Path, capsys) -> None:
    s = Store(db)
    try:
        report = compare_campaign(s.cursor(), "p")
        data = load_report_data(s.cursor(), "p")
        html = render_html(data)
        book = openpyxl.load_workbook(io.BytesIO(write_workbook(data)))["summary"]
    finally:
        s.close()
    assert report.cells and all("namespace= " in c.params for c in report.cells)  # the key is unchanged
    assert report.summary and all("namespace= " in i.params for i in report.summary)
    assert not _said([i.sentence for i in report.summary]), report.summary[0].sentence
    failed = [w for w in report.warnings if "failed nomad run of volume-churn" in w]
    assert failed and not _said(failed), failed
    heads = re.findall(r"<h3[^>]*>[^<]*</h3>|<figcaption[^>]*>[^<]*|<th scope=\"row\">.*?</th>", html)
    assert heads and any("volume-churn" in h for h in heads) and not _said(heads), _said(heads)[:1]
    matrix = [[str(v) for v in row if v is not None] for row in book.iter_rows(min_row=5, max_row=6, values_only=True)]
    assert matrix[0][0] == "volume-churn" and not _said(matrix[0]), matrix
    assert main(["report", "p", "--db", str(db), "--all-metrics"]) == 0
    out = capsys.readouterr().out
    assert "volume-churn: count=20" in out and "Control-plane phases" in out
    assert not _said(out.splitlines()), _said(out.splitlines())
    assert main(["report", "p", "--db", str(db), "--json"]) == 0
    cells = json.loads(capsys.readouterr().out)["cells"]
    assert {c["params"] for c in cells} == {templates.params_key({"count": 20, **EMPTY})}


def test_two_cells_apart_only_by_an_empty_and_an_absent_param_read_apart(db: Path, capsys) -> None:
    plain, tagged = (templates.params_key({"count": 20, **p}) for p in (EMPTY, TAGGED))
    s = Store(db)
    try:
        report = compare_campaign(s.cursor(), "q")
        change = compare_campaigns(s.cursor(), "q", "r")
        html = render_html(load_report_data(s.cursor(), "q"), change)
    finally:
        s.close()
    items = {(i.params, i.metric): i.sentence for i in report.summary}
    for metric in {m for _, m in items}:
        a, b = items[tagged, metric], items[plain, metric]
        assert a.startswith(f"volume-churn count=20 tag= {metric}"), a  # namespace= plugin_id= left out
        assert b.startswith(f"volume-churn count=20 {metric}"), b
    rows = re.findall(r'<th scope="row">volume-churn<br><span class="note">([^<]*)<br>', html)
    assert sorted(set(rows)) == ["count=20", "count=20 tag="], rows
    # 'only in' of --json and the API: 'node test params metric' whole, as documented (review r1 of 3d9c3c3e)
    only = change.model_dump(mode="json")["only_in_base"]
    assert only and all(n.startswith(f"node-1 volume-churn {tagged} ") for n in only), only
    assert all(n.startswith("node-1 volume-churn count=20 tag= ") for n in change.only_in_base_labels)
    print_change(change.model_dump(mode="json"), all_metrics=True)
    out = capsys.readouterr().out
    assert "Only in q: node-1 volume-churn count=20 tag= " in out and not _said(out.splitlines()), out
    assert "Only in q: node-1 volume-churn count=20 tag= " in html and "Only in q: node-1 volume-churn count=20 " \
        "namespace" not in html
    assert main(["report", "q", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "volume-churn: count=20" in out and "tag=" in out and not _said(out.splitlines()), out


def test_a_report_and_its_failed_runs_read_their_params_from_one_set_of_labels(db: Path, capsys) -> None:
    """Review r1 of 3d9c3c3e (HIGH): the report's cells have 'count=20 namespace= plugin_id=', a failed run
    'count=20'. Each view computed its own labels: the text report's heading read 'volume-churn: count=20 · ...'
    and the warning '1 failed nomad run of volume-churn count=20 on node-1', two cells read as one. Now every view
    reads the report's one map: the cells keep 'namespace= plugin_id=' wherever they are named."""
    full = templates.params_key({"count": 20, **EMPTY})
    s = Store(db)
    try:
        report = compare_campaign(s.cursor(), "s")
        html = render_html(load_report_data(s.cursor(), "s"))
    finally:
        s.close()
    (failed,) = [w for w in report.warnings if "failed nomad run" in w]
    assert "of volume-churn count=20 on node-1" in failed, failed  # the failed run's key is 'count=20'
    assert report.summary and all(i.sentence.startswith(f"volume-churn {full} ") for i in report.summary), \
        report.summary[0].sentence
    heads = re.findall(r"<h3[^>]*>([^<]*)</h3>", html)
    assert heads and all(f"volume-churn {full} ·" in h for h in heads if "volume-churn" in h), heads[:3]
    assert main(["report", "s", "--db", str(db), "--all-metrics"]) == 0
    out = capsys.readouterr().out
    assert "1 failed nomad run of volume-churn count=20 on node-1" in out, out
    named = [line for line in out.splitlines() if line.startswith("volume-churn:")]  # the table and phase headings
    assert len(named) >= 2 and all(re.match(f"volume-churn: {full}( |$)", line) for line in named), named
    assert main(["report", "s", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params_labels"] == {"volume-churn": {full: full, "count=20":
                                                                                     "count=20"}}


def test_a_comparison_names_its_cells_and_its_cells_in_one_campaign_only_from_one_set_of_labels(
        db: Path, capsys) -> None:
    """Review r1 of 3d9c3c3e (HIGH): 't' has 'count=20 namespace= plugin_id=', 'u' that and 'count=20'. The
    table's labels came from the compared cells ('volume-churn count=20'), the 'only in' names' from both
    campaigns ('Only in u: node-1 volume-churn count=20 ...'): they read alike. Now both read the comparison's
    one map: the table says 'volume-churn count=20 namespace= plugin_id='."""
    full = templates.params_key({"count": 20, **EMPTY})
    s = Store(db)
    try:
        change = compare_campaigns(s.cursor(), "t", "u")
    finally:
        s.close()
    assert change.cells and not change.only_in_base and change.only_in_new
    print_change(change.model_dump(mode="json"), all_metrics=True)
    out = capsys.readouterr().out
    assert "Only in u: node-1 volume-churn count=20 " in out, out
    rows = [line for line in out.splitlines() if "volume-churn" in line and line.startswith("│")]  # the table's
    assert rows and all(f"volume-churn {full}" in line for line in rows), [r for r in rows if full not in r]


def test_a_value_keeps_a_k_equals_that_is_no_param_of_the_test(db: Path, capsys) -> None:
    """Review r1 of 3d9c3c3e (LOW): {"xy": "é =ü b="} read 'xy=é =ü' (its 'b=' taken for an empty param)."""
    s = Store(db)
    try:
        report = compare_campaign(s.cursor(), "v")
    finally:
        s.close()
    assert report.summary and all(i.sentence.startswith("volume-churn count=20 xy=é =ü b= ") for i in report.summary)
    assert main(["report", "v", "--db", str(db)]) == 0
    assert "volume-churn: count=20 xy=é =ü b=" in capsys.readouterr().out


def test_a_test_whose_params_are_all_empty_is_named_without_a_gap(db: Path, capsys) -> None:
    """Review r1 of 3d9c3c3e (LOW): every param empty left an empty label: 'volume-churn:  · node-1' (the phase
    table's heading). Now the parts are joined without the empty one."""
    assert main(["report", "w", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "volume-churn · node-1 · lower is better" in out and "volume-churn:  " not in out, out


def test_a_comparisons_sentence_lines_name_each_cell_as_its_table_does(db: Path, capsys) -> None:
    """`podtax compare`'s '- node test metric: sentence' lines named no params, so the cells 'count=20 namespace=
    plugin_id=' and 'count=20' of one node and test read alike there, each with its own sentence."""
    s = Store(db)
    try:
        change = compare_campaigns(s.cursor(), "u", "x")
    finally:
        s.close()
    print_change(change.model_dump(mode="json"), all_metrics=True)
    said = [line.split(":", 1)[0] for line in capsys.readouterr().out.splitlines() if line.startswith("- node-1 ")]
    assert len(said) == len(change.cells) > 0 and len(set(said)) == len(said), said
    assert any(x.startswith("- node-1 volume-churn count=20 namespace= plugin_id= ") for x in said), said
