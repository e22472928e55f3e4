"""`podtax scores`: a score past the TTL showed only "ignored: older than the 168 h TTL" in its scheduler column,
not the CONFOUNDED and BIMODAL flags that also make it unusable (audit hB2; the JSON had them). Now the column
says both. Real result events in a real DuckDB file, the analyzer app served on a free port, the CLI's main()."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from analysis_synth import sysbench_results
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 3, 3, 8, tzinfo=UTC)  # long past any TTL


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    rng = np.random.default_rng(3)
    store = Store(tmp_path_factory.mktemp("scores") / "podtax.duckdb")
    # node-m: 8 runs of sysbench 1.0.18 near 1000 and 8 of 1.0.20 near 700 (two builds, two modes); node-s steady
    store.write_batch(sysbench_results("old", [], list(1000 + rng.normal(0, 3, 8)), node="node-m",
                                       tool_version="1.0.18", run_prefix="m18", t0=T0)
                      + sysbench_results("old", [], list(700 + rng.normal(0, 3, 8)), node="node-m",
                                         tool_version="1.0.20", run_prefix="m20", t0=T0 + timedelta(hours=1))
                      + sysbench_results("old", [], list(1000 + rng.normal(0, 3, 12)), node="node-s", run_prefix="s",
                                         t0=T0))
    with serve(create_app(store)) as u:
        yield u
    store.close()


def test_an_expired_score_shows_the_flags_that_make_it_unusable(url, capsys, monkeypatch):
    monkeypatch.setenv("PODTAX_API_URL", url)
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
    by_node = {s["node"]: s for s in json.loads(capsys.readouterr().out)["scores"]}
    assert {"CONFOUNDED", "BIMODAL"} <= set(by_node["node-m"]["flags"]), by_node["node-m"]
    assert by_node["node-m"]["status"].startswith("ignored: older than the "), by_node["node-m"]
    assert by_node["node-m"]["status"].endswith("; flagged CONFOUNDED/BIMODAL"), by_node["node-m"]
    assert "flagged" not in by_node["node-s"]["status"], by_node["node-s"]
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    table = capsys.readouterr().out
    row = table[table.index("node-m"):table.index("node-s")]
    assert "older than the" in row and "CONFOUNDED/BIMODAL" in row, table
