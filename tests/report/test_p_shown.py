"""One p-value, one way of writing it (audit hF, item 10): a planted 5% pod tax at 20 runs a side (p adjusted
~1e-7) read "p < 0.0001" in its sentence, "<0.001" in the CLI table and "0.0000" in the HTML's full table, as if
p were 0; and `podtax compare` printed "0.00075" in its table under a sentence saying "p = 0.0008". The HTML
tables now write a p-value as the sentences do, and the compare table as the report table does. The served
campaigns of tests/report/conftest.py (real DuckDB, analyzer app over HTTP), the real CLI."""

from __future__ import annotations

import re

import pytest
from podtax.cli.main import main
from podtax.cli.report_render import p_shown
from podtax.pvalue import ALPHA
from podtax_analyzer.campaign_compare import _why_inconclusive
from podtax_analyzer.wording import fmt_p, p_text_of

from tests.report.conftest import json_cells


def _column(html: str, table: str, header: str) -> list[str]:
    part = html.split(f'id="{table}"')[1].split("</table>")[0]
    heads = re.findall(r"<th>(.*?)</th>", part)
    at = heads.index(header)
    return [re.findall(r"<td>(.*?)</td>", row)[at] for row in re.findall(r"<tr>(.*?)</tr>", part)[1:]]


def test_the_html_never_writes_a_p_value_as_0(served, tmp_path):
    page = tmp_path / "r.html"
    assert main(["report", "shifted", "--api", served.url, "--html", str(page), "--compare", "base"]) == 0
    html = page.read_text()
    cells = json_cells("report", "shifted", "--api", served.url, "--json")
    assert all(c["p_adjusted"] < 0.0001 for c in cells.values() if c["primary"]), cells  # the planted case
    shown = _column(html, "full-table", "p adjusted")
    assert shown and "0.0000" not in shown and "&lt; 0.0001" in shown, shown
    compared = _column(html, "compare", "p adjusted")
    assert compared and all(re.fullmatch(r"&lt; 0\.0001|0\.\d{4}", p) for p in compared), compared


def test_the_compare_table_writes_p_as_the_report_table(served, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    capsys.readouterr()
    assert main(["compare", "base", "shifted", "--api", served.url]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("│ node-")]
    assert rows and all(" <0.001 " in r or re.search(r" 0\.\d{1,4} ", r) for r in rows), out
    assert not re.search(r"0\.000\d\d", out), out  # "0.00075" beside "p = 0.0008"


# review hR #4: a p written as ALPHA reads as on the line whichever side it is on
NEAR_ALPHA = [  # p, the CLI tables (two significant digits), the sentences and the HTML (four decimals)
    (0.0496, "0.0496", "0.0496"),  # significant: was "0.05" in the tables
    (0.0504, "0.0504", "0.0504"),  # not significant: was "0.05" too
    (0.04996, "0.04996", "0.04996"),  # significant: was "0.0500" in the sentence
    (0.05004, "0.05004", "0.05004"),
    (0.05, "0.05", "0.0500"),  # ALPHA itself (not significant) is written as it is
    (0.0123, "0.012", "0.0123"),  # elsewhere unchanged
]


@pytest.mark.parametrize(("p", "table", "sentence"), NEAR_ALPHA)
def test_a_p_value_never_rounds_onto_alpha(p, table, sentence):
    assert p_shown({"p_adjusted": p}) == table
    assert fmt_p(p) == sentence and p_text_of(p) == f"p = {sentence}"
    if p >= ALPHA:  # podtax compare's reason for withholding a verdict whose interval clears the threshold
        reason = _why_inconclusive({"change_ci_low": 1.2, "change_ci_high": 1.3, "p_adjusted": p}, 0.01)
        assert f"adjusted p-value ({'0.05' if p == ALPHA else sentence}) is not below 0.05" in reason, reason
