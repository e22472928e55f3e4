"""`podtax results` at common widths (review r4 of the narrow-terminal commits). At 80 columns every run was a card
(nine columns' smallest pieces, 76 characters, and the heavy box's 28): 200 runs were 1,401 lines. One run with a long
value (a 253-character node name, a 300-character flag) made cards of every run at almost any width. The flag texts
under the table ignored COLUMNS in a pipe (a 313-character line at 40). Through main(argv), the real analyzer app
serving a real DuckDB file."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from podtax import events
from podtax.event_payloads import printable
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import cli_output, serve

T0 = datetime(2025, 5, 5, 8, tzinfo=UTC)
LONG_NODE = ".".join(["a" * 62] * 4)[:252] + "z"  # 253 characters, as long as a Kubernetes node name may be
LONG_FLAG = "X" * 300 + ": a flag whose name is one long word"
ESCAPED = "SHORT: " + "tail\u202eend" * 30 + " of the events done"  # hidden characters, as printable writes them


def _run(i: int, node: str, flags: list[str]) -> events.Envelope:
    run = events.RunSpec(run_id=f"r{i}", campaign="wide", node=node, env="kubernetes", test="fio",
                         params={"bs": "4k", "rw": "randread"}, cluster="local", attempt=1, timeout_s=600)
    start = T0 + timedelta(minutes=i)
    res = events.Result(run=run, tool="fio", tool_version="fio-3.33", parser_version="1", flags=flags,
                        metrics=[events.Metric(name="read_iops", value=1000.0 + i, unit="IOPS", higher_is_better=True)],
                        started_at=start, ended_at=start + timedelta(seconds=10))
    return events.result(res, "test")


@pytest.fixture(scope="module")
def wide_url(tmp_path_factory):
    """Twelve runs: ten plain ones, one on a node with a 253-character name, one with a 300-character flag name."""
    store = Store(tmp_path_factory.mktemp("wide") / "podtax.duckdb")
    store.write_batch([_run(i, f"node-{i}", [ESCAPED] if i == 3 else []) for i in range(10)]
                      + [_run(10, LONG_NODE, []), _run(11, "node-x", [LONG_FLAG])])
    with serve(create_app(store)) as served:
        yield served
    store.close()


def _figures_whole(out: str, runs: list[dict]) -> None:
    for r in runs:
        value = re.escape(f"{r['metrics'][0]['value']:,.2f}")
        assert len(re.findall(rf"(?<![\d,.]){value}(?!\d)", out)) == 1, out


def test_results_of_one_campaign_is_a_table_at_80_columns(served, monkeypatch):
    monkeypatch.setenv("PODTAX_API_URL", served.url)
    runs = json.loads(cli_output("results", "--campaign", "synthetic", "--json", "--limit", "200"))
    monkeypatch.setenv("COLUMNS", "80")
    out = cli_output("results", "--campaign", "synthetic", "--limit", "200")
    lines = out.splitlines()
    assert [line for line in lines if len(line) > 80] == [], out
    header = next(line for line in lines if line.startswith("node "))
    assert header.split() == ["node", "env", "test", "params", "tool", "metric", "value", "flags"], header
    assert not any(line.startswith("  env: ") for line in lines), out  # no card
    assert "…" not in out and "campaign synthetic" in lines[0]
    assert len(lines) <= 3 * len(runs) + 3, len(lines)  # a table's rows: 1,401 lines of cards for 200 runs before
    for r in runs:
        value = f"{r['metrics'][0]['value']:,.2f}"
        assert any(line.startswith(r["node"] + " ") and value in line for line in lines), (value, out)


@pytest.mark.parametrize("columns", ["120", "200"])
def test_one_long_value_makes_a_card_of_its_row_only(wide_url, monkeypatch, columns):
    monkeypatch.setenv("PODTAX_API_URL", wide_url)
    runs = json.loads(cli_output("results", "--campaign", "wide", "--json"))
    monkeypatch.setenv("COLUMNS", columns)
    out = cli_output("results", "--campaign", "wide")
    lines = out.splitlines()
    assert [line for line in lines if len(line) > int(columns)] == [], out
    table = lines[:lines.index("2 row(s) with a value too long for the table:")]
    for i in range(10):  # the plain runs: rows of the table, node and figure on one line
        assert any(line.startswith(f"node-{i} ") and f"{1000 + i:,.2f}" in line for line in table), out
    cards = "\n".join(lines[len(table):])
    assert "".join(cards.split()).count(LONG_NODE) == 1 and "X" * 300 in "".join(cards.split()), cards
    assert "1,010.00 IOPS" in cards and "1,011.00 IOPS" in cards and "node-x · kubernetes" in cards
    _figures_whole(out, runs)


def test_flag_texts_are_wrapped_at_columns_in_a_pipe_never_inside_an_escape(wide_url, monkeypatch):
    monkeypatch.setenv("PODTAX_API_URL", wide_url)
    monkeypatch.setenv("COLUMNS", "40")
    out = cli_output("results", "--campaign", "wide")
    assert [line for line in out.splitlines() if len(line) > 40] == [], out
    shown = printable(ESCAPED)
    start = out.index("- SHORT:")
    text = out[start:out.index(" done", start) + len(" done")]
    assert "".join(text.split()) == "".join(f"- {shown}".split()), text
    assert text.count("\\u202e") == shown.count("\\u202e"), text  # no escape broken across lines
    assert "2 of 12 runs carry flags" in " ".join(out.split())
