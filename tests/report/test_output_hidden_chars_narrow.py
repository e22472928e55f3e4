"""A long name from the bus with a hidden character (written `\\u202e`, event_payloads.printable) in a narrow
terminal: rich wrapped the name's cell inside the escape, `node-1\\u202` on one line and `e2-edon...` on the next, so
the text shown named no character and the name read as another. Now a name's cell breaks only between whole
escapes (report_render), in `podtax report` and `podtax compare`, through main(argv) at COLUMNS=40, 60 and 80."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from podtax import events

from tests.report.conftest import cli_output, serve_batches
from tests.report.test_report_hostile import T0, result_events

NODE = "node-1\u202e2-edon-long-name-xxxxxxxx"
# an escape cut short: at the end of a line or of a table cell (a border or the space before the next column)
PARTIAL = re.compile(r"\\(?:u[0-9a-f]{0,3}|x[0-9a-f]?)?(?![0-9a-fux])")


def _hostile(campaign: str, t0=T0) -> list[events.Envelope]:
    """Two nodes, so the report's tables have a node column; the hostile one first."""
    host = [1000.0 + i for i in range(8)]
    return [e for k, node in enumerate((NODE, "node-2"))
            for e in result_events(campaign, host, [v * 0.97 for v in host], node=node, run_prefix=f"{campaign}-{k}",
                                   t0=t0 + timedelta(hours=k))]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    batches = [_hostile("narrow"), _hostile("narrow2", T0 + timedelta(days=1))]
    with serve_batches(tmp_path_factory.mktemp("narrow"), batches) as u:
        yield u


@pytest.mark.parametrize("columns", ["40", "60", "80"])
@pytest.mark.parametrize("argv", [("report", "narrow"), ("report", "narrow", "--all-metrics"),
                                  ("compare", "narrow", "narrow2")])
def test_a_narrow_table_never_breaks_a_name_inside_an_escape(url, argv, columns, monkeypatch):
    monkeypatch.setenv("PODTAX_API_URL", url)
    monkeypatch.setenv("COLUMNS", columns)
    out = cli_output(*argv)
    assert [line for line in out.splitlines() if PARTIAL.search(line)] == [], out
    assert "\\u202e" in out  # the escape shown whole
