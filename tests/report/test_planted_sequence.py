"""A planted campaign whose sides ran one after the other (audit hB2): 10 host runs on one day, then 10 pod runs a
week later, 5% lower, each side steady (no DRIFT within it). Nothing told the reader that the pod's 5% could be
the week's: the report said "Pod 5.0% slower than host" with p < 0.001 and no warning. Now the cell keeps its
figures and its sentence, its warnings (the CLI's Notes, the HTML's notes) say the sides were not interleaved,
with both time spans; an interleaved cell says nothing. Real result events in a real DuckDB file, the real
analyzer app and the real CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from analysis_synth import result_event
from fastapi.testclient import TestClient
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 8, 4, 8, tzinfo=UTC)
HOST = [1000.0, 1003.0, 998.0, 1001.0, 999.0, 1002.0, 1000.5, 997.5, 1001.5, 999.5]
POD = [v * 0.95 for v in HOST]
SAID = ("Not interleaved: every host run (10 runs, 2025-08-04 08:00 to 2025-08-04 08:27 UTC) started before the "
        "first pod run (10 runs, 2025-08-11 08:00 to 2025-08-11 08:27 UTC)")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("sequence") / "podtax.duckdb")
    out = []
    for i, (h, p) in enumerate(zip(HOST, POD, strict=True)):
        # "blocks": the host side, then the pod side a week later; "mixed": the same values interleaved
        out.append(result_event(f"b-h{i}", "blocks", "node-1", "host", h, T0 + timedelta(minutes=3 * i)))
        out.append(result_event(f"b-p{i}", "blocks", "node-1", "kubernetes", p, T0 + timedelta(days=7, minutes=3 * i)))
        start = T0 + timedelta(days=1, minutes=6 * i)
        out.append(result_event(f"m-h{i}", "mixed", "node-1", "host", h, start))
        out.append(result_event(f"m-p{i}", "mixed", "node-1", "kubernetes", p, start + timedelta(minutes=3)))
    s.write_batch(out)
    yield s
    s.close()


def test_sides_run_one_after_the_other_are_said_to(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with serve(create_app(store)) as url:
        assert main(["report", "blocks", "--api", url, "--json"]) == 0
        c = json.loads(capsys.readouterr().out)["cells"][0]
        assert main(["report", "blocks", "--api", url]) == 0
        table = capsys.readouterr().out
    assert c["verdict"] == "slower" and abs(c["ratio"] - 0.95) < 1e-9  # the figures are kept
    assert any(w.startswith(SAID) for w in c["warnings"]), c["warnings"]
    assert SAID in c["sentence"] and "read as the pod's effect" in c["sentence"], c["sentence"]
    assert "Not interleaved: every host run" in table
    html = TestClient(create_app(store)).get("/report/blocks").text
    assert SAID in html


def test_interleaved_sides_say_nothing_of_it(store, capsys):
    with serve(create_app(store)) as url:
        assert main(["report", "mixed", "--api", url, "--json"]) == 0
    c = json.loads(capsys.readouterr().out)["cells"][0]
    assert c["verdict"] == "slower" and "interleaved" not in c["sentence"] + " ".join(c["warnings"])
