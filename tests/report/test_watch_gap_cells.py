"""A figure timed after a dropped Kubernetes watch (the timeline parser's run flag WATCH_GAP: end points seen only by
the re-list after the gap, an upper bound) was flagged in `podtax results` only: the analyzer's cells and `podtax
report` said nothing of it. A cell whose metric a run's WATCH_GAP names now carries the cell flag WATCH_GAP, saying
how many of which side's runs, in JSON, the terminal report (flag and legend) and the HTML. Synthetic volume-churn
timelines (2 of 6 kubernetes runs with a claim watch gap their PVs' pv_created were seen after) through the real
derive/parser into a real DuckDB file, served by the real analyzer app, read by the real CLI."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
from podtax import events
from podtax.cli.report_phases import from_api

from tests.report.conftest import (
    cli_output,
    csv_rows,
    exported_comparisons,
    json_cells,
    phase_plot,
    served_campaigns,
    sheet_rows,
    timeline_run,
    workbook_cells,
)
from tests.report.test_lower_bound_verdicts import PARAMS, RUNS, SPREAD, _timeline

# campaign -> the kubernetes runs (of 6, k-th slowest from 0) that had the gap: below the median, or at and above it
CAMPAIGNS = {"gap": (0, 1), "gaptop": (3, 4, 5), "gapfast": (3, 4, 5)}
NOMAD_S = {"gapfast": 0.05}  # nomad's seconds, 0.1 elsewhere: gap -> gapfast halves the nomad/kubernetes ratio
GAP_RUNS = 2


def _gapped(text: str) -> str:
    """``text`` whose summary says the claim watch was down 1-16 s and a re-list saw every PV's pv_created."""
    lines = [json.loads(line) for line in text.splitlines()]
    late = {x["name"]: ["pv_created"] for x in lines if x["kind"] == "object"}
    lines[-1]["watch_gaps"] = [{"watch": "claim", "start": 1.0, "end": 16.0, "late": late}]
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def _events(campaign: str, month: int) -> list[events.Envelope]:
    out: list[events.Envelope] = []
    for seq in range(2 * RUNS):
        backend, k = ("kubernetes", "nomad")[seq % 2], seq // 2
        seconds = 15.0 if backend == "kubernetes" else NOMAD_S.get(campaign, 0.1)
        run = events.RunSpec(run_id=f"{campaign}-{backend}-{k}", campaign=campaign, node="node-1", env=backend,
                             test="volume-churn", params=PARAMS, sequence=seq)
        text = _timeline(backend, seconds * (1 + 0.01 * SPREAD[k]), None, None, False)
        if backend == "kubernetes" and SPREAD[k] in CAMPAIGNS[campaign]:  # the run SPREAD[k]-th slowest from 0
            text = _gapped(text)
        started = datetime(2026, month, 1, 2, tzinfo=UTC) + timedelta(minutes=2 * seq)
        out += timeline_run(run, text, started, 40)
    return out


url = served_campaigns("gap", CAMPAIGNS, _events)


def test_a_cell_named_by_watch_gap_is_flagged(url: str, tmp_path: Any) -> None:
    cells = json_cells("report", "gap", "--api", url)
    c = cells["provisioned_p50_ms"]
    assert "WATCH_GAP" in c["flags"], c
    reason = c["flag_details"]["WATCH_GAP"]
    assert f"{GAP_RUNS} of 6 kubernetes runs timed provisioned_p50_ms after a dropped watch: upper bounds" in reason
    assert "nomad" not in reason.split(":")[1], reason
    assert "WATCH_GAP" not in cells["accepted_p50_ms"]["flags"], cells["accepted_p50_ms"]  # not named by the flag
    # the gapped runs are the two fastest: a smaller true time cannot move the median, the verdict stands
    assert "they lie below the median" in reason and c["verdict"] == "faster", c

    text = cli_output("report", "gap", "--all-metrics", "--api", url)
    assert "WATCH_GAP" in text and "after a dropped Kubernetes watch" in text, text  # the flag and its legend

    cli_output("report", "gap", "--html", str(tmp_path / "gap.html"), "--api", url)
    html = (tmp_path / "gap.html").read_text()
    assert "WATCH_GAP" in html and "timed provisioned_p50_ms after a dropped watch" in html


def test_a_median_resting_on_upper_bounds_makes_no_verdict_that_needs_them(url: str) -> None:
    """Kubernetes' median rests on runs timed after a dropped watch (3 of its 6 slowest): it may be faster than
    shown, so "nomad faster" (kubernetes slower) does not stand on it (stats/verdict.py's mirror of LOWER_BOUND)."""
    cells = json_cells("report", "gaptop", "--api", url)
    c = cells["provisioned_p50_ms"]
    assert c["verdict"] == "inconclusive", c  # was "faster" (nomad 99% faster)
    assert "the median rests on them" in c["flag_details"]["WATCH_GAP"], c
    assert "kubernetes's provisioned_p50_ms is only an upper bound" in c["sentence"], c["sentence"]
    assert "no verdict that nomad is faster" in c["sentence"], c["sentence"]
    assert cells["accepted_p50_ms"]["verdict"] != "inconclusive", cells["accepted_p50_ms"]  # not named: unbounded


# The marks (this stop): the WATCH_GAP bound reached the cell's flag and verdict only; `podtax compare`, the exports,
# the phase table and the CDF said nothing of it. Each now marks it as it marks LOWER_BOUND, mirrored ("≤ value").

def test_compare_marks_a_ratio_resting_on_an_upper_bound(url: str) -> None:
    """gap -> gaptop: gaptop's kubernetes median (the ratio's baseline) is only an upper bound, so its
    nomad/kubernetes ratio is only a lower bound (before: both bare, base_bound and new_bound null)."""
    cells = json_cells("compare", "gap", "gaptop", "--api", url)
    c = cells["provisioned_p50_ms"]
    assert (c["base_bound"], c["new_bound"]) == (None, "at least"), c
    assert f"≥ {c['new_value']:.3f} in gaptop" in c["sentence"], c["sentence"]
    assert cells["accepted_p50_ms"]["new_bound"] is None, cells["accepted_p50_ms"]  # not named by the flag
    text = cli_output("compare", "gap", "gaptop", "--all-metrics", "--api", url)
    assert f"≥ {c['new_value']:.3f}" in text and "(WATCH_GAP," in text and "dropped watch" in text, text


def test_compare_gives_no_improvement_a_bound_ratio_cannot_support(url: str) -> None:
    """gap -> gapfast: nomad twice as fast, but gapfast's kubernetes median is only an upper bound (its true time
    may be shorter), so its ratio may be larger than shown and "improved" does not stand on it (before: improved)."""
    c = json_cells("compare", "gap", "gapfast", "--api", url)["provisioned_p50_ms"]
    assert c["change"] < 0.6 and c["verdict"] == "inconclusive", c["sentence"]
    assert ("gapfast's kubernetes provisioned_p50_ms is only an upper bound (≤ " in c["sentence"]
            and "timed after a dropped watch or holding a retry's wait), so the true change may be larger than "
                "shown; no verdict that it "
                "improved" in c["sentence"]), c["sentence"]


def test_the_report_and_phase_table_mark_the_upper_bound(url: str) -> None:
    cells = json_cells("report", "gaptop", "--api", url)
    c = cells["provisioned_p50_ms"]
    assert (c["host_upper_bound"], c["pod_upper_bound"]) == (True, False), c
    assert "kubernetes median at most" in c["sentence"] or "only an upper bound (≤" in c["sentence"], c["sentence"]
    gap = json_cells("report", "gap", "--api", url)
    assert not gap["provisioned_p50_ms"]["host_upper_bound"]  # the gapped runs lie below the median: exact
    rows = from_api(url, "gaptop", 0.01, "holm")["rows"]
    p50 = next(r for r in rows if r["metric"] == "provisioned_p50_ms")
    assert p50["baseline_upper_bound"] and not p50["candidate_upper_bound"], p50
    pooled = next(r for r in rows if r["statistic"] == "objects" and r["phase"] == "provisioned")["pooled"]
    # the 3 slowest runs of 6 were late: every value at and above the pooled median is an upper bound
    assert pooled["kubernetes"]["p50_upper_bound"] and pooled["kubernetes"]["p99_upper_bound"], pooled
    assert not pooled["nomad"]["p50_upper_bound"], pooled
    text = cli_output("report", "gaptop", "--all-metrics", "--api", url)
    table = text[text.index("Control-plane phases"):]
    assert re.search(r"6 · ≤ 15,\d{3}", table) and "≤ = an upper bound (WATCH_GAP, RETRIED)" in table, table


def test_exports_carry_the_upper_bounds(url: str, tmp_path: Any) -> None:
    rows = exported_comparisons("gaptop", url, tmp_path / "csv")
    cols = list(next(iter(rows.values())))
    # added late: right after the columns of before, which keep their places
    assert cols[cols.index("sentence") + 1:][:2] == ["host_upper_bound", "pod_upper_bound"]
    assert (rows["provisioned_p50_ms"]["host_upper_bound"], rows["provisioned_p50_ms"]["pod_upper_bound"]) == \
        ("true", "false"), rows["provisioned_p50_ms"]
    assert rows["accepted_p50_ms"]["host_upper_bound"] == "false"
    late = [r for r in csv_rows(tmp_path / "csv" / "phases.csv") if r["upper_bound"] == "true"]
    assert len(late) == 3 * 20 and {r["phase"] for r in late} == {"provisioned"}, late[:3]  # 3 runs' 20 claims

    cli_output("export", "gaptop", "--parquet", str(tmp_path / "pq"), "--api", url)
    with duckdb.connect() as con:
        assert con.execute(f"SELECT count(*) FROM '{tmp_path / 'pq' / 'phases.parquet'}' WHERE upper_bound") \
            .fetchone() == (60,)

    cli_output("export", "gaptop", "--xlsx", str(tmp_path / "g.xlsx"), "--api", url)
    bound = workbook_cells(tmp_path / "g.xlsx")["provisioned_p50_ms"]
    cols = list(bound)
    assert cols[cols.index("caveat") + 1:][:2] == ["baseline median is an upper bound (WATCH_GAP, RETRIED)",
                                                   "candidate median is an upper bound (WATCH_GAP, RETRIED)"], cols
    assert bound["baseline median is an upper bound (WATCH_GAP, RETRIED)"] is True, bound
    assert bound["candidate median is an upper bound (WATCH_GAP, RETRIED)"] is False, bound
    phases = sheet_rows(tmp_path / "g.xlsx", "phases")
    late = "upper bound (seen after a dropped watch or holding a retry's wait: took less)"
    assert len([r for r in phases if r[late]]) == 60


def test_the_html_cdf_marks_the_late_end_points(url: str, tmp_path: Any) -> None:
    cli_output("report", "gaptop", "--html", str(tmp_path / "g.html"), "--api", url)
    html = (tmp_path / "g.html").read_text()
    prov = phase_plot(html, "provisioned")
    assert prov.count('class="late"') == 60, prov.count('class="late"')  # one open square per late claim
    caption = re.search(r'<p class="note phase-stats">(.*?)</p>', prov).group(1)
    assert re.search(r"kubernetes: 120 objects, p50 ≤ [0-9.,]+ ms, p99 ≤ [0-9.,]+ ms, min ≤ [0-9.,]+ ms, "
                     r"avg ≤ [0-9.,]+ ms; 60 seen only by a re-list after a dropped watch", caption), caption
    assert "nomad: 120 objects, p50 ≤" not in caption, caption
    full = html[html.index('id="full"'):]
    row = re.search(r"<td>provisioned_p50_ms</td>.*?</tr>", full).group(0)
    assert re.search(r"<td>6</td><td>6</td><td>≤ [0-9.,]+</td><td>[0-9.,]+</td>", row), row
