"""Labels leave out params whose value is empty (pU, session 53: `podtax report` of a volume-churn campaign titled its
cells "volume-churn: access_mode=ReadWriteOnce ... namespace= observe=watch plugin_id= ...", in the text report's
headings, its summary sentences and its phase table). The params key itself (the cells' and summary items' `params`
in --json, exports, the runner's lookups) keeps them. Real parser output in a real DuckDB file, the real CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from podtax import templates
from podtax.cli.main import main
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.html_report import render_html
from podtax_analyzer.report_data import load_report_data
from podtax_analyzer.store import Store
from timeline_synth import run_events

EMPTY = {"namespace": "", "plugin_id": ""}


def test_params_label_drops_empty_values_only() -> None:
    key = templates.params_key({"count": 5, "namespace": "", "plugin_id": "", "size": "1Gi"})
    assert key == "count=5 namespace= plugin_id= size=1Gi"
    assert templates.params_label(key) == "count=5 size=1Gi"
    assert templates.params_label("namespace=") == ""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("labels") / "podtax.duckdb"
    s = Store(path)
    try:
        batch: list = []
        for seq in range(6):
            batch += run_events("p", "kubernetes", "volume-churn", seq, params=EMPTY)
            batch += run_events("p", "nomad", "volume-churn", 100 + seq, params=EMPTY)
        s.write_batch(batch)
    finally:
        s.close()
    return path


def test_summary_sentences_and_html_headings_leave_empty_params_out(db: Path) -> None:
    s = Store(db)
    try:
        report = compare_campaign(s.cursor(), "p")
        html = render_html(load_report_data(s.cursor(), "p"))
    finally:
        s.close()
    assert report.cells and all("namespace= " in c.params for c in report.cells)  # the key is unchanged
    assert report.summary and all("namespace= " in i.params for i in report.summary)
    said = [i.sentence for i in report.summary if "namespace=" in i.sentence or "plugin_id=" in i.sentence]
    assert not said, said[0]
    heads = re.findall(r"<h3[^>]*>[^<]*</h3>|<figcaption[^>]*>[^<]*", html)
    assert heads and not [h for h in heads if "namespace=" in h or "plugin_id=" in h]


def test_the_text_report_leaves_empty_params_out_and_json_keeps_them(db: Path, capsys) -> None:
    assert main(["report", "p", "--db", str(db), "--all-metrics"]) == 0
    out = capsys.readouterr().out
    assert "volume-churn: " in out and "count=20" in out
    assert "namespace=" not in out and "plugin_id=" not in out, out
    assert main(["report", "p", "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["params"] for c in data["cells"]} == {templates.params_key({"count": 20, **EMPTY})}
