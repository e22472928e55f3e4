"""A figure that is only a lower bound (LOWER_BOUND) is marked wherever it is shown (audit a4, item 3): the cell
sentence said "nomad median 10000 ms", the HTML phase caption "p99 10000 ms" with the given-up objects drawn as
any other, the workbook's phases sheet and comparison table and comparisons.csv had no lower-bound column,
`podtax compare` showed a bounded ratio bare, and at 80 columns the phase table cut "120 · 112 · ≥ …" and the
metric column "provisioned_m…" (max and p99 alike). Synthetic volume-churn timelines through the real
derive/parser into a real DuckDB file, served by the real analyzer app, read by the real CLI."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from podtax import events
from podtax.cli.report_phases import STATISTIC, from_api

from tests.report.conftest import (
    cli_output,
    exported_comparisons,
    json_cells,
    phase_plot,
    served_campaigns,
    sheet_rows,
    timeline_run,
    workbook_cells,
)
from tests.report.test_lower_bound_verdicts import PARAMS, RUNS, SPREAD, _timeline

# campaign: backend -> (seconds, given up at (or None)); every nomad run of "slow" and "fast" has one given up
CAMPAIGNS = {
    "slow": {"kubernetes": (15.0, None), "nomad": (20.0, 25.0)},  # bounded and slower: the verdict stands
    "fast": {"kubernetes": (15.0, None), "nomad": (0.1, 10.0)},  # bounded and faster: withheld
    "exact": {"kubernetes": (15.0, None), "nomad": (0.1, None)},
}


def _events(campaign: str, month: int) -> list[events.Envelope]:
    out: list[events.Envelope] = []
    for seq in range(2 * RUNS):
        backend, k = ("kubernetes", "nomad")[seq % 2], seq // 2
        seconds, given_up = CAMPAIGNS[campaign][backend]
        run = events.RunSpec(run_id=f"{campaign}-{backend}-{k}", campaign=campaign, node="node-1", env=backend,
                             test="volume-churn", params=PARAMS, sequence=seq)
        started = datetime(2026, month, 1, 2, tzinfo=UTC) + timedelta(minutes=2 * seq)
        text = _timeline(backend, seconds * (1 + 0.01 * SPREAD[k]), given_up, None, False)
        out += timeline_run(run, text, started, 40)
    return out


url = served_campaigns("marks", CAMPAIGNS, _events)


def test_the_sentence_says_at_least_for_a_bound_median(url: str) -> None:
    c = json_cells("report", "slow", "--api", url)["provisioned_max_ms"]
    assert c["pod_lower_bound"] and c["verdict"] == "slower", c
    assert "nomad median at least 25000 ms" in c["sentence"], c["sentence"]  # was "nomad median 25000 ms"
    assert "kubernetes median at least" not in c["sentence"]


def test_csv_and_workbook_carry_the_bounds(url: str, tmp_path: Any) -> None:
    rows = exported_comparisons("slow", url, tmp_path / "csv")
    assert (rows["provisioned_max_ms"]["pod_lower_bound"], rows["provisioned_max_ms"]["host_lower_bound"]) == \
        ("true", "false"), rows["provisioned_max_ms"]
    assert rows["provisioned_p50_ms"]["pod_lower_bound"] == "false"
    assert "at least" in rows["provisioned_max_ms"]["sentence"]

    cli_output("export", "slow", "--xlsx", str(tmp_path / "slow.xlsx"), "--api", url)
    bound = workbook_cells(tmp_path / "slow.xlsx")["provisioned_max_ms"]
    assert bound["candidate median is a lower bound (LOWER_BOUND)"] is True, bound
    assert bound["baseline median is a lower bound (LOWER_BOUND)"] is False, bound
    given_up = [r for r in sheet_rows(tmp_path / "slow.xlsx", "phases")
                if r["lower bound (given up while waiting: took longer)"]]
    assert len(given_up) == RUNS and {(r["environment"], r["phase"]) for r in given_up} == {("nomad", "provisioned")}, \
        given_up
    assert all(r["latency (ms)"] == pytest.approx(25_000, rel=0.01) for r in given_up)


def test_the_html_phase_plot_and_caption_mark_the_given_up_objects(url: str, tmp_path: Any) -> None:
    cli_output("report", "fast", "--html", str(tmp_path / "fast.html"), "--api", url)
    html = (tmp_path / "fast.html").read_text()
    prov = phase_plot(html, "provisioned")
    assert prov.count('class="given-up"') == RUNS, prov  # one open circle per given-up volume
    caption = re.search(r'<p class="note phase-stats">(.*?)</p>', prov).group(1)
    # the mean holds the given-up times (a lower bound); min is a completed claim's (exact)
    assert re.search(r"nomad: 120 objects, p50 [0-9.,]+ ms, p99 ≥ [0-9.,]+ ms, min [0-9.,]+ ms, avg ≥ [0-9.,]+ ms; "
                     r"6 given up while waiting: drawn at their given-up time", caption), caption
    assert "kubernetes: 120 objects" in caption and "kubernetes: 120 objects, p50 ≥" not in caption


def test_compare_marks_a_bound_ratio(url: str) -> None:
    cells = json_cells("compare", "exact", "fast", "--api", url)
    c = cells["provisioned_max_ms"]
    assert (c["base_bound"], c["new_bound"]) == (None, "at least"), c  # NEW's candidate is bounded
    assert f"≥ {c['new_value']:.3f} in fast" in c["sentence"], c["sentence"]
    assert cells["provisioned_p50_ms"]["new_bound"] is None
    text = cli_output("compare", "exact", "fast", "--all-metrics", "--api", url)
    assert f"≥ {c['new_value']:.3f}" in text, text


def test_the_narrow_layout_keeps_bounds_and_metric_names(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = cli_output("report", "fast", "--all-metrics", "--api", url)
    assert "…" not in text, text
    for suffix in ("max_ms", "p50_ms", "p95_ms", "p99_ms"):  # one line each, under "provisioned_"
        assert re.search(rf"^\s+{suffix}\b", text, re.M), (suffix, text)
    assert max(len(line) for line in text.splitlines()) <= 80
    pooled = text[text.index("Control-plane phases"):]
    assert re.search(r"≥ 10,\d{3}", pooled), pooled  # the pooled p99 of nomad's provisioned, whole


def _pieces(word: str) -> set[str]:
    """A word and each run of its parts broken after '_' or '/' ('pv_deleted': 'pv_', 'deleted', 'pv_deleted')."""
    parts = re.findall(r"[^_/]+[_/]?|[_/]", word)
    return {"".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)}


NUMBER = re.compile(r"\[?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?[],]?")


@pytest.mark.parametrize("campaign", ["fast", "slow"])
def test_the_narrow_phase_table_breaks_cells_only_between_words(url: str, campaign: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns the phase table folded its headers and flags mid-word ('kubernete' / 's', 'statisti' / 'c',
    'INSUFFI' / 'NT, ERR'): every cell now breaks only at a space or after '_', '/' or '·', '≥ value' whole."""
    monkeypatch.setenv("COLUMNS", "80")
    text = cli_output("report", campaign, "--api", url)
    # the heading above the table is words too, wrapped where the console needs (at any space between them)
    start = re.search(r"lower\s+is\s+better\s+for\s+every\s+phase\n", text).end()  # type: ignore[union-attr]
    lines = text[start:text.index("  definitions (from -> to)")].splitlines()
    rows = from_api(url, campaign, 0.01, "holm")["rows"]
    labels = [*STATISTIC.values(), "no detectable difference", "not comparable", "inconclusive", "faster", "slower",
              "phase statistic runs median ratio [95% CI] verdict flags kubernetes nomad nomad/kubernetes · ≥ —"]
    flags = [f for r in rows for f in r["flags"]]
    words = {*" ".join(labels).split(), *(r["phase"] for r in rows), *flags, *(f"{f}," for f in flags)}
    allowed = set().union(*map(_pieces, words))
    assert flags and len(lines) > 10, text
    assert max(len(line) for line in lines) <= 80, text
    for line in lines:
        if set(line.strip()) <= {"─"}:
            continue
        assert not line.rstrip().endswith("≥"), line  # '≥ value' on one line
        for token in line.split():
            assert token in allowed or NUMBER.fullmatch(token), (token, line, text)
