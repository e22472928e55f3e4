"""`podtax compare` of a count (audit hB2, left): a one-environment cell's medians and their difference were
printed as measurements, "kubernetes median (count) 11.00 count in cc-a, 14.00 count in cc-b (difference
+3.000 count ...)", while `podtax report` prints a count as a count since a11cb05 (wording.fmt_value with the
unit). Now 11, 14 and +3. Real result events in a real DuckDB file, the analyzer app and the CLI's main()."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from analysis_synth import result_event
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2026, 11, 16, 8, tzinfo=UTC)
BASE = [11.0, 10, 12, 11, 11, 13, 10, 11, 12]  # median 11
NEW = [14.0, 15, 13, 14, 14, 16, 13, 14, 15]  # median 14


def _events(campaign: str, values: list[float], day: int) -> list[events.Envelope]:
    return [result_event(f"{campaign}-{i}", campaign, "node-1", "kubernetes", value,
                         T0 + timedelta(days=day, minutes=2 * i), test="pod-startup",
                         params={"count": 20, "concurrency": 5}, metric="errors", unit="count",
                         higher_is_better=False, tool="podtax", tool_version="1")
            for i, value in enumerate(values)]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("cmpcount") / "podtax.duckdb")
    s.write_batch(_events("cc-a", BASE, 0) + _events("cc-b", NEW, 1))
    yield s
    s.close()


def test_a_compared_count_reads_as_a_count(store, capsys):
    with serve(create_app(store)) as url:
        assert main(["compare", "cc-a", "cc-b", "--api", url, "--json"]) == 0
        (c,) = json.loads(capsys.readouterr().out)["cells"]
        assert (c["base_value"], c["new_value"], c["diff"]) == (11.0, 14.0, 3.0)  # the numbers unchanged
        assert "kubernetes median (count) 11 count in cc-a, 14 count in cc-b (difference +3 count" in c["sentence"]
        assert main(["compare", "cc-a", "cc-b", "--api", url, "--all-metrics"]) == 0
    out = capsys.readouterr().out
    assert "11 count in cc-a" in out and "11.00" not in out and "+3.000" not in out, out
