"""`podtax compare` and `podtax report` in narrow terminals: at 80 columns compare squeezed its ten columns so rich
wrapped figures mid-number ("-0.04" / "8", "<0.00" / "1") and headers mid-word; at 40 the report's stacked table
cut figures ("[0.952, 0.9", "129.5 (n=7") and dropped its cell and verdict columns. Now each command picks one line
per cell, a stacked table, or one block of lines per cell (cli/cards), whichever fits. Through main(argv) at
COLUMNS=40, 80 and 120 on the report tests' campaigns (conftest's `served`: a real DuckDB file, the real analyzer
app): every figure of the command's --json output is printed whole in its table, beside its cell's node, and no
line is wider than the terminal."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from podtax.cli.report_render import p_shown

from tests.analysis.analysis_synth import fixture_campaign, insert_cells
from tests.report.conftest import cli_output

COLUMNS = ("40", "80", "120")


def _count(token: str, text: str) -> int:
    """How often `token` stands whole in `text`: not the end of a longer number, nor its start."""
    return len(re.findall(r"(?<![\d.,+\-])" + re.escape(token) + r"(?!\d|[.,]\d)", text))


def _missing(expected: Counter[str], text: str) -> dict[str, tuple[int, int]]:
    return {t: (n, _count(t, text)) for t, n in expected.items() if _count(t, text) < n}


def _wider(out: str, columns: str) -> list[str]:
    return [line for line in out.splitlines() if len(line) > int(columns)]


def _ratio_like(c: dict) -> bool:
    return c["base_ratio"] is not None or c["new_ratio"] is not None or "ratio" in c["compared"]


def _compare_figures(c: dict) -> list[str]:
    """A compare cell's figures, formatted from its JSON: ratios to 3 decimals, other values to 4 digits."""
    fmt, signed = (("{:.3f}", "{:+.3f}") if _ratio_like(c) else ("{:.4g}", "{:+.4g}"))
    values = [fmt.format(c[k]) for k in ("base_value", "new_value") if c[k] is not None]
    values += [signed.format(c[k]) for k in ("diff", "diff_ci_low", "diff_ci_high") if c[k] is not None]
    return values + [p_shown(c), c["node"], c["verdict"].split()[0]]


@pytest.fixture(scope="module")
def again(served):
    """The many-flag fixture campaign a second time (another seed), to compare with the first: a campaign compared
    with itself is refused (5a99851)."""
    insert_cells(served.store.cursor(), fixture_campaign("synthetic-again", seed=43))
    return served


@pytest.mark.parametrize("columns", COLUMNS)
@pytest.mark.parametrize("pair", [("synthetic", "synthetic-again"), ("base", "shifted")])
def test_compare_prints_every_figure_whole_at_any_width(again, pair, columns, monkeypatch):
    served = again
    monkeypatch.setenv("PODTAX_API_URL", served.url)
    cells = json.loads(cli_output("compare", *pair, "--json"))["cells"]
    assert len({c["node"] for c in cells}) > 1, cells  # several nodes' cells in common, so figures to print
    monkeypatch.setenv("COLUMNS", columns)
    out = cli_output("compare", *pair, "--all-metrics")
    table = out.split("\n- ")[0]  # the sentences below repeat the figures: the table alone must show them
    assert _missing(Counter(t for c in cells for t in _compare_figures(c)), table) == {}, out
    assert _wider(out, columns) == [], out


def _value(v: float) -> str:
    return f"{v:,.4g}" if abs(v) < 1000 else f"{v:,.0f}"


def _report_figures(c: dict) -> list[str]:
    """A report cell's figures from its JSON: run counts, medians (each mode's), ratio and CI, p adj., node."""
    out = [str(c["n_host"]), str(c["n_pod"]), p_shown(c), c["node"]]
    for side in ("host", "pod"):
        if c[f"{side}_modes"]:
            out += re.findall(r"([\d.,]+) \(n=\d+\)", c[f"{side}_modes"])
        elif c[f"{side}_median"] is not None:
            out.append(_value(c[f"{side}_median"]))
    return out + [f"{c[k]:.3f}" for k in ("ratio", "ci_low", "ci_high") if c[k] is not None]


@pytest.mark.parametrize("columns", COLUMNS)
@pytest.mark.parametrize("campaign", ["synthetic", "shifted"])
def test_report_prints_every_figure_whole_at_any_width(served, campaign, columns, monkeypatch):
    monkeypatch.setenv("PODTAX_API_URL", served.url)
    cells = json.loads(cli_output("report", campaign, "--json"))["cells"]
    monkeypatch.setenv("COLUMNS", columns)
    out = cli_output("report", campaign, "--all-metrics")
    tables = out.split("\nratio = ")[0]  # the flags, notes and summary below repeat figures
    assert _missing(Counter(t for c in cells for t in _report_figures(c)), tables) == {}, out
    verdicts = Counter(max((c.get("direction") or c["verdict"]).split(), key=len) for c in cells)  # may wrap
    assert {v: n for v, n in verdicts.items() if tables.count(v) < n} == {}, out
    assert _wider(out, columns) == [], out


def _phase_figures(r: dict) -> list[str]:
    """A phase row's figures from the API's phase table: runs and median of each side, ratio and CI."""
    if r["statistic"] == "objects":
        return [str(side["objects"]) for side in (r.get("pooled") or {}).values() if side]
    out = [str(r[f"n_{side}"]) for side in ("baseline", "candidate") if r[f"n_{side}"]]
    out += [_value(r[f"{side}_median"]) for side in ("baseline", "candidate") if r[f"{side}_median"] is not None]
    return out + [f"{r[k]:.3f}" for k in ("ratio", "ci_low", "ci_high") if r[k] is not None]


@pytest.mark.parametrize("columns", (*COLUMNS, "60"))
def test_the_phase_table_prints_every_figure_whole_at_any_width(served, columns, monkeypatch):
    """The control-plane phase table at 40 and 60 columns: its wrapped layout still needed more room than that, and
    rich folded its figures ("1." / "51" / "4") and headers ("kubernete" / "s"); now one block of lines per row."""
    import httpx

    rows = httpx.get(f"{served.url}/api/campaigns/cp/phase-table").json()["rows"]
    monkeypatch.setenv("PODTAX_API_URL", served.url)
    monkeypatch.setenv("COLUMNS", columns)
    out = cli_output("report", "cp")
    table = out.split("Control-plane phases")[1].split("definitions (from -> to)")[0]
    assert rows and _missing(Counter(t for r in rows for t in _phase_figures(r)), table) == {}, out
    assert all(table.count(r["phase"]) for r in rows) and "kubernetes" in table, out
    assert _wider(out, columns) == [], out


@pytest.mark.parametrize("columns", COLUMNS)
def test_results_and_scores_print_every_figure_whole_at_any_width(served, columns, monkeypatch):
    """`podtax results` and `podtax scores`: rich gave each of their columns a share of the width and cut the rest
    with '…' ("996.…", "events_per_s…" at 80 and even 120 columns; every cell at 40). Now each column is at least its
    longest piece (cells break at spaces, '_' and '/'), else one block of lines per row."""
    from podtax import templates

    monkeypatch.setenv("PODTAX_API_URL", served.url)
    runs = json.loads(cli_output("results", "--json", "--limit", "30"))
    scores = json.loads(cli_output("scores", "--json"))["scores"]
    monkeypatch.setenv("COLUMNS", columns)
    out = cli_output("results", "--limit", "30")
    expected: Counter[str] = Counter()
    for r in runs:
        params = templates.params_key(r["params"])
        m = next((m for m in r["metrics"] if templates.is_primary_metric(r["test"], params, m["name"])),
                 r["metrics"][0])  # none primary: the first, as the table shows
        expected.update([f"{m['value']:,.2f}", m["unit"], r["node"], r["campaign"]])
    assert "…" not in out and _missing(expected, out) == {}, out
    assert _wider(out, columns) == [], out
    out = cli_output("scores")
    expected = Counter(t for s in scores for t in (s["node"], str(s["n"]), *(f"{s[k]:,.4g}" for k in
                                                  ("median", "ci_low", "ci_high") if s[k] is not None)))
    assert "…" not in out and _missing(expected, out) == {}, out
    assert _wider(out, columns) == [], out
