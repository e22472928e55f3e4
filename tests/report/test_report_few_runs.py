"""`podtax report` of cells with fewer runs a side than podtax.flags.MIN_RUNS (INSUFFICIENT): the report gave
such a cell no verdict, yet printed a Mann-Whitney p-value (0.33 at 2 runs a side, audit p7-few), an interval
and a Hodges-Lehmann effect from 4 or 5 runs a side, and counted each in the Holm/BH family, which raised the
other cells' adjusted p-values. Now the cell keeps its ratio of medians only, in every output, and leaves the
family (as `podtax compare` does since 655a317). Real result events in a real DuckDB file, the real analyzer
app served over HTTP and the real CLI: terminal table, --json, --html, --xlsx and --csv."""

from __future__ import annotations

import csv
import html
import json
import re
from datetime import UTC, datetime, timedelta

import numpy as np
import openpyxl
import pytest
from analysis_synth import result_event
from podtax import events
from podtax.cli.main import main
from podtax.flags import MIN_RUNS
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store
from podtax_analyzer.workbook import COMPARISON_HEADERS

from tests.report.conftest import serve

T0 = datetime(2025, 3, 3, 8, tzinfo=UTC)
# node: (host runs, pod runs); the pod side is 10% slower everywhere
CASES = {
    "z-one-a-side": (1, 1),  # "over 1 runs" (audit hF); sorts last, so the other cases keep their seeds
    "two-a-side": (2, 2),   # the audit's p7-few: p = 0.33 was printed
    "five-a-side": (5, 5),  # an interval, an effect and p = 0.0079 were printed
    "pod-three": (8, 3),
    "host-five": (5, 8),
    "enough": (MIN_RUNS, MIN_RUNS),
    "plenty": (10, 10),
}
FEW = sorted(n for n, (h, p) in CASES.items() if min(h, p) < MIN_RUNS)
ENOUGH = sorted(set(CASES) - set(FEW))
WITHHELD = ("ci_low", "ci_high", "ci_method", "hl_ratio", "hl_ci_low", "hl_ci_high", "p_value", "p_adjusted")


def _events(campaign: str, node: str, n_host: int, n_pod: int, seed: int, day: int) -> list[events.Envelope]:
    rng = np.random.default_rng(seed)
    host = [("host", 1000.0 * (1 + rng.normal(0, 0.003))) for _ in range(n_host)]
    pod = [("kubernetes", 900.0 * (1 + rng.normal(0, 0.003))) for _ in range(n_pod)]
    runs = [r for pair in zip(host, pod, strict=False) for r in pair] + host[n_pod:] + pod[n_host:]  # interleaved
    out = []
    for i, (env, value) in enumerate(runs):
        start = T0 + timedelta(days=day, minutes=2 * i)  # never overlapping
        out.append(result_event(f"{campaign}-{node}-{i}", campaign, node, env, value, start))
    return out


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    """Campaign "few" holds every case; "control" the same runs of the cells with enough runs only."""
    store = Store(tmp_path_factory.mktemp("reportfew") / "podtax.duckdb")
    for k, (node, (n_host, n_pod)) in enumerate(sorted(CASES.items())):
        for day, campaign in enumerate(("few", "control") if node in ENOUGH else ("few",)):
            store.write_batch(_events(campaign, node, n_host, n_pod, seed=k, day=day))
    with serve(create_app(store)) as u:
        yield u
    store.close()


def _json(url: str, campaign: str, correction: str, capsys) -> dict[str, dict]:
    assert main(["report", campaign, "--json", "--api", url, "--correction", correction]) == 0
    return {c["node"]: c for c in json.loads(capsys.readouterr().out)["cells"]}


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_json_gives_the_ratio_only_and_the_family_ignores_the_cell(url, correction, capsys):
    cells = _json(url, "few", correction, capsys)
    for node in FEW:
        c = cells[node]
        assert c["flags"] == ["INSUFFICIENT"] and c["verdict"] == "inconclusive", (node, c["flags"])
        assert c["ratio"] == pytest.approx(0.9, abs=0.01) and c["change_pct"] is not None, node
        assert {k: c[k] for k in WITHHELD} == dict.fromkeys(WITHHELD), node
        assert "too few runs for an interval, a p-value or a verdict" in c["sentence"], c["sentence"]
        assert not re.search(r"p [=<]|95% CI", c["sentence"]), c["sentence"]
        assert re.search(r"over \d+ runs?,", c["sentence"]) and " 1 runs" not in c["sentence"], c["sentence"]
    control = _json(url, "control", correction, capsys)
    for node in ENOUGH:  # the same p-values, adjusted as if the cells with too few runs were not there
        c = cells[node]
        assert c["verdict"] == "slower" and c["p_value"] is not None, (node, c["sentence"])
        assert cells[node]["p_adjusted"] == control[node]["p_adjusted"], (node, correction)


def test_the_terminal_table_prints_no_p_value(url, capsys):
    assert main(["report", "few", "--api", url]) == 0
    out = capsys.readouterr().out
    rows = {node: next(line for line in out.splitlines() if f" {node} " in line) for node in CASES}
    for node in FEW:
        assert re.search(r"0\.9\d\d\s+pod \d+\.\d% slower\s+—\s+inconclusive", rows[node]), rows[node]
    for node in ENOUGH:
        assert re.search(r"\]\s+pod \d+\.\d% slower\s+[<0-9.e-]+\s+slower", rows[node]), rows[node]


def test_html_workbook_and_csv_show_no_p_value(url, tmp_path, capsys):
    page, book, folder = tmp_path / "few.html", tmp_path / "few.xlsx", tmp_path / "csv"
    assert main(["report", "few", "--api", url, "--html", str(page)]) == 0
    assert main(["export", "few", "--api", url, "--xlsx", str(book)]) == 0
    assert main(["export", "few", "--api", url, "--csv", str(folder)]) == 0
    capsys.readouterr()

    full = page.read_text().split('id="full-table"')[1]
    cols = ["node", "test", "params", "metric", "unit", "n base", "n cand.", "base median", "cand. median",
            "ratio", "CI low", "CI high", "p adjusted", "verdict", "flags", "caveat"]
    rows = [dict(zip(cols, (html.unescape(v) for v in re.findall(r"<td>(.*?)</td>", r)), strict=True))
            for r in re.findall(r"<tr>(<td>.*?)</tr>", full)]
    by_node = {r["node"]: r for r in rows}
    ws = openpyxl.load_workbook(book)["summary"]
    lines = [list(r) for r in ws.iter_rows(values_only=True)]
    at = next(i for i, r in enumerate(lines) if list(r[:len(COMPARISON_HEADERS)]) == COMPARISON_HEADERS)
    sheet = {r[0]: dict(zip(COMPARISON_HEADERS, r, strict=False)) for r in lines[at + 1:] if r[0]}
    with (folder / "comparisons.csv").open() as f:
        table = {r["node"]: r for r in csv.DictReader(f)}
    for node in FEW:
        assert by_node[node]["ratio"].startswith("0.9") and by_node[node]["p adjusted"] == "—", by_node[node]
        assert by_node[node]["CI low"] == "—", by_node[node]
        assert sheet[node]["ratio"] == pytest.approx(0.9, abs=0.01), sheet[node]
        assert [sheet[node][k] for k in ("CI low (95%)", "p-value", "p adjusted")] == [None] * 3, sheet[node]
        assert table[node]["ratio"] and not any(table[node][k] for k in ("p_value", "p_adjusted", "hl_ratio",
                                                                         "ci_low")), table[node]
    for node in ENOUGH:
        assert by_node[node]["p adjusted"] != "—" and sheet[node]["p adjusted"] is not None, node
        assert table[node]["p_adjusted"], node
