"""Which start a Kubernetes figure of provisioned and bound used (podtax.phases.provision_start): the claim's create,
or, in a run of a WaitForFirstConsumer class, when the claim was seen given a node. The phase table gave the
template's definition, which names both, so a row never said which one its runs used, and a side whose runs mixed
them (a default class changed between runs) pooled two different intervals into one median and a ratio. Now the
parser flags each run timed from the node (PROVISION_START: node), each row says per side the start its runs used,
and a side mixing them has no ratio. Real DuckDB file, parser results of hand-made timelines."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from typing import Any

import openpyxl
from podtax import events
from podtax import phases as ph
from podtax.derive import derive
from podtax.parsers.timeline import parse
from podtax_analyzer.campaign_compare import compare_campaigns
from podtax_analyzer.comparisons import cell_stats_for, compare_campaign
from podtax_analyzer.exports import export_zip
from podtax_analyzer.html_report import render_html
from podtax_analyzer.phase_table import phase_table
from podtax_analyzer.provision_starts import provision_starts
from podtax_analyzer.report_data import load_report_data
from podtax_analyzer.store import Store
from podtax_analyzer.workbook import COMPARISON_HEADERS, write_workbook
from timeline_synth import run_events, timeline_text

RUNS = 6


def with_start(text: str, start: str) -> str:
    """A Kubernetes volume-churn timeline whose summary says `start`; each claim seen given a node 50 ms after its
    create (before its PV)."""
    lines = [json.loads(raw) for raw in text.splitlines()]
    for line in lines:
        if line["kind"] == "header":
            line["params"]["consumer"] = True
        elif line["kind"] == "object":
            line["t"]["node_selected"] = round(line["t"]["request_sent"] + 0.05, 6)
        elif line["kind"] == "summary":
            line["provision_start"] = start
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def k8s_run(campaign: str, seq: int, start: str, old: bool = False) -> tuple[events.RawLogV1, Any]:
    """A consumer run of `start`; `old`: parsed before the PROVISION_START run flags (its result has none)."""
    raw, _ = run_events(campaign, "kubernetes", "volume-churn", seq)
    run = raw.data.run.model_copy(update={"params": {**raw.data.run.params, "consumer": True}})
    log = raw.data.model_copy(update={"stdout": with_start(raw.data.stdout, start), "run": run})
    result = derive(log)
    if old:
        kept = [f for f in result.data.flags if not f.startswith("PROVISION_START")]
        result = result.model_copy(update={"data": result.data.model_copy(update={"flags": kept})})
    return events.raw_log(log, "podtax/runner"), result


def stored(tmp_path, campaign: str, starts: list[str], old: bool | list[bool] = False) -> Store:
    """A store of a campaign whose Kubernetes runs used `starts` (`old`: per run, or for all), a Nomad run each."""
    s = Store(tmp_path / "podtax.duckdb")
    s.write_batch(batch_of(campaign, starts, old))
    return s


def batch_of(campaign: str, starts: list[str], old: bool | list[bool] = False, first: int = 0) -> list:
    """The events of `stored`'s runs, sequence numbers from `first`."""
    batch = []
    olds = old if isinstance(old, list) else [old] * len(starts)
    for seq, (start, was) in enumerate(zip(starts, olds, strict=True), start=first):
        batch += k8s_run(campaign, seq * 2, start, was)
        raw, _ = run_events(campaign, "nomad", "volume-churn", seq * 2 + 1)  # the same cell (params) as kubernetes'
        log = raw.data.model_copy(update={"run": raw.data.run.model_copy(update={"params": {
            **raw.data.run.params, "consumer": True}})})
        batch += [events.raw_log(log, "podtax/runner"), derive(log)]
    return batch


def table(tmp_path, campaign: str, starts: list[str], old: bool | list[bool] = False):
    s = stored(tmp_path, campaign, starts, old)
    con = s.cursor()
    try:
        return phase_table(compare_campaign(con, campaign), None, provision_starts(con, campaign))
    finally:
        s.close()


def row(t, phase: str, statistic: str = "p50"):
    return next(r for r in t.rows if r.test == "volume-churn" and r.phase == phase and r.statistic == statistic)


def test_a_run_timed_from_the_node_is_flagged() -> None:
    text = timeline_text("volume-churn", "kubernetes", 5, seed=1)
    node = parse(with_start(text, "node")).flags
    assert [f for f in node if f.startswith(ph.NODE_START_FLAG)] == [
        "PROVISION_START: node: provisioned and bound are timed from when each claim was seen given a node "
        "(volume.kubernetes.io/selected-node, its class WaitForFirstConsumer), not its create"], node
    create = parse(with_start(text, "create")).flags
    assert [f for f in create if f.startswith(ph.CREATE_START_FLAG)] == [
        "PROVISION_START: create: provisioned and bound are timed from each claim's create (its class binds at "
        "once), as in a run without consumers"], create
    assert not [f for f in parse(text).flags if f.startswith("PROVISION_START")]  # no consumers: always the create


def test_each_row_says_the_start_its_runs_used(tmp_path) -> None:
    t = table(tmp_path, "node", ["node"] * RUNS)
    provisioned = row(t, "provisioned")
    assert provisioned.definitions["kubernetes"] == (
        "when the claim was seen given a node (volume.kubernetes.io/selected-node, a WaitForFirstConsumer class; no "
        "pod scheduling in it) -> the PV's ADDED event (or the claim's Bound, if its watch delivers that first) (as "
        f"all {RUNS} runs)"), provisioned.definitions
    assert provisioned.definition.startswith("kubernetes: when the claim was seen given a node") and \
        "; nomad: create request sent -> PUT .../create returned" in provisioned.definition
    assert provisioned.ratio is not None
    assert row(t, "bound", "makespan").definitions["kubernetes"].startswith("when the claim was seen given a node")
    assert row(t, "accepted").definitions["kubernetes"] == "create request sent -> the create call returned"


def test_runs_timed_from_the_create_say_so(tmp_path) -> None:
    t = table(tmp_path, "create", ["create"] * RUNS)
    assert row(t, "provisioned").definitions["kubernetes"] == (
        "create request sent -> the PV's ADDED event (or the claim's Bound, if its watch delivers that first) (as "
        f"all {RUNS} runs)")


def test_a_side_mixing_the_two_starts_has_no_ratio(tmp_path) -> None:
    t = table(tmp_path, "mixed", ["node", "create"] * (RUNS // 2))
    for phase, statistic in (("provisioned", "p50"), ("provisioned", "makespan"), ("bound", "p50")):
        r = row(t, phase, statistic)
        assert r.ratio is None and r.verdict is None and r.ci_low is None, r
        assert r.note.startswith(f"not comparable: 3 of 6 kubernetes runs timed {phase} from when the claim was seen "
                                 "given a node (WaitForFirstConsumer), 3 from its create"), r.note
        assert r.definitions["kubernetes"] == "mixed: 3 of 6 runs from the claim's node, 3 from its create"
    accepted = row(t, "accepted")
    assert accepted.ratio is None and "not comparable" not in (accepted.note or "")  # nomad has no accepted


def test_runs_parsed_before_the_flags_say_their_start_is_not_known(tmp_path) -> None:
    t = table(tmp_path, "old", ["node"] * RUNS, old=True)
    r = row(t, "provisioned")
    assert r.definitions["kubernetes"].startswith("create request sent -> the PV's ADDED event") and \
        r.definitions["kubernetes"].endswith(f"(start not recorded for {RUNS} of {RUNS} runs: parsed before the "
                                             "PROVISION_START run flag; `podtax reparse` them)"), r.definitions
    assert "WaitForFirstConsumer class, its summary marked provision_start node" in r.definitions["kubernetes"]
    assert r.ratio is not None


def test_a_side_of_known_and_unknown_starts_has_no_ratio(tmp_path) -> None:
    """Review r6 L1: runs parsed before the flags beside runs flagged node kept the side's ratio and verdict; the
    unknown ones may have been timed from the create, so the median may pool the two starts."""
    t = table(tmp_path, "some-old", ["node", "create"] * 5, old=[False, True] * 5)  # 10 runs: a verdict, before
    r = row(t, "provisioned")
    assert (r.ratio, r.verdict, r.ci_low) == (None, None, None), (r.ratio, r.verdict)
    assert r.note.startswith("not comparable: the start of 5 of 10 kubernetes runs is not recorded (parsed before the "
                             "PROVISION_START run flag), 5 were timed from the node: their median may pool two "
                             "different intervals; no ratio is given (`podtax reparse` them)"), r.note
    assert "CONFOUNDED" in r.flags, r.flags  # the comparison withholds it too (every output)


def test_runs_without_consumers_are_timed_from_the_create(tmp_path) -> None:
    s = Store(tmp_path / "podtax.duckdb")
    batch = []
    for seq in range(RUNS):
        batch += run_events("plain", "kubernetes", "volume-churn", seq * 2)
        batch += run_events("plain", "nomad", "volume-churn", seq * 2 + 1)
    s.write_batch(batch)
    con = s.cursor()
    try:
        t = phase_table(compare_campaign(con, "plain"), None, provision_starts(con, "plain"))
    finally:
        s.close()
    assert row(t, "bound").definitions["kubernetes"] == ("create request sent -> the claim's MODIFIED event with "
                                                         f"phase Bound (as all {RUNS} runs)")


def test_every_output_withholds_the_verdict_of_a_side_mixing_the_starts(tmp_path) -> None:
    """Review r6 H1: the phase table withheld the mixed side's ratio, but compare_campaign gave the cell a ratio and
    a verdict ("slower"), which the headline, the HTML report, comparisons.csv, the workbook and --json said."""
    s = stored(tmp_path, "mixed", ["node", "create"] * 5)  # 10 runs: enough for the verdict the mixed figure gave
    con = s.cursor()
    try:
        report = compare_campaign(con, "mixed")
        data = load_report_data(con, "mixed")
        html = render_html(data)
        book = openpyxl.load_workbook(io.BytesIO(write_workbook(data)))
        zipped = zipfile.ZipFile(io.BytesIO(export_zip(con, report, "csv")))
        first = next(c for c in report.cells if c.metric == "provisioned_p50_ms")
        runner = cell_stats_for(con, "mixed", first.node, first.test, first.params, cluster=first.cluster)
    finally:
        s.close()
    assert (first.ratio, first.verdict) == (None, "inconclusive"), (first.ratio, first.verdict)  # was 0.784, faster
    cells = [c for c in report.cells if c.metric.startswith("provisioned_")]
    assert len(cells) > 3
    for c in cells:
        assert (c.ratio, c.ci_low, c.ci_high, c.p_value, c.p_adjusted) == (None,) * 5, c
        assert c.verdict == "inconclusive" and "CONFOUNDED" in c.flags, c
        assert c.flag_details["CONFOUNDED"].startswith(
            "Not comparable: 5 of 10 kubernetes runs timed provisioned from when the claim was seen given a node "
            "(WaitForFirstConsumer), 5 from its create"), c.flag_details
    assert not [i.sentence for i in report.summary if i.metric.startswith("provisioned_") and "slower" in i.sentence]
    assert not [c for c in runner if c.metric.startswith("provisioned_") and (c.ratio or c.verdict != "inconclusive")]
    csv_rows = list(csv.DictReader(io.StringIO(zipped.read("comparisons.csv").decode())))
    assert {(r["ratio"], r["verdict"]) for r in csv_rows if r["metric"].startswith("provisioned_")} == {
        ("", "inconclusive")}
    sheet = list(book["summary"].iter_rows(values_only=True))
    at = next(i for i, r in enumerate(sheet) if list(r[:len(COMPARISON_HEADERS)]) == COMPARISON_HEADERS)
    xlsx = [dict(zip(COMPARISON_HEADERS, r, strict=False)) for r in sheet[at + 1:] if r[0]]
    assert {(r["ratio"], r["verdict"]) for r in xlsx if str(r["metric"]).startswith("provisioned_")} == {
        (None, "inconclusive")}, xlsx
    rows = re.findall(r"<tr[^>]*>(?:(?!</tr>).)*provisioned_p50_ms(?:(?!</tr>).)*</tr>", html, re.S)
    assert rows and not [r for r in rows if re.search(r"\b(slower|faster)\b", re.sub(r"<[^>]+>", " ", r))], rows


def test_podtax_compare_of_campaigns_timed_from_different_starts_is_not_comparable(tmp_path) -> None:
    """Review r6 M1: `podtax compare` of a campaign timed from the create against one timed from the node gave a
    verdict ("worsened"): a change of the figure's definition read as a change of the backend."""
    s = Store(tmp_path / "podtax.duckdb")
    s.write_batch(batch_of("from-create", ["create"] * 10) + batch_of("from-node", ["node"] * 10, first=100)
                  + batch_of("node-again", ["node"] * 10, first=200))
    con = s.cursor()
    try:
        change = compare_campaigns(con, "from-create", "from-node")
        alike = compare_campaigns(con, "from-node", "node-again")
    finally:
        s.close()
    cells = [c for c in change.cells if c.metric.startswith(("provisioned_", "bound_"))]
    p50 = next(c for c in cells if c.metric == "provisioned_p50_ms")
    assert p50.verdict == "not comparable", p50.sentence
    assert len(cells) > 3
    for c in cells:
        assert c.verdict == "not comparable" and c.diff is None and c.p_value is None, (c.metric, c.verdict, c.diff)
        assert "NEW:CONFOUNDED" in c.flags, c.flags
    assert p50.sentence == (
        "Not comparable: kubernetes runs timed provisioned from the claim's create in from-create and from when the "
        "claim was seen given a node (WaitForFirstConsumer) in from-node: the figure's definition changed between "
        "the campaigns, which a difference would read as a change of the backend; no change is given."), p50.sentence
    same = next(c for c in alike.cells if c.metric == "provisioned_p50_ms")
    assert same.verdict != "not comparable" and "NEW:CONFOUNDED" not in same.flags, same.sentence
    accepted = next(c for c in change.cells if c.metric == "accepted_p50_ms")
    assert "NEW:CONFOUNDED" not in accepted.flags  # accepted starts at the create in both


def compared(tmp_path, batch: list, *pairs: tuple[str, str]) -> list:
    """compare_campaigns of each (base, new) of `pairs` in a store of `batch`."""
    s = Store(tmp_path / "podtax.duckdb")
    s.write_batch(batch)
    try:
        return [compare_campaigns(s.cursor(), base, new) for base, new in pairs]
    finally:
        s.close()


def test_podtax_compare_of_a_campaign_mixing_the_starts_gives_no_figures(tmp_path) -> None:
    """Review r9 M1: a one-environment cell whose runs in one campaign mixed the two starts got a median, difference,
    interval and a p-value in the correction family (verdict withheld only): figures from a pooled median."""
    batch = [e for i, st in enumerate(["node"] * 5 + ["create"] * 5) for e in k8s_run("mixed", i * 2, st)]
    as_base, as_new = compared(tmp_path, batch + [e for i in range(10) for e in k8s_run("node", 200 + i * 2, "node")],
                               ("mixed", "node"), ("node", "mixed"))
    for change, tag in ((as_base, "BASE"), (as_new, "NEW")):
        p50 = next(c for c in change.cells if c.metric == "provisioned_p50_ms")
        assert p50.verdict == "not comparable", p50.sentence
        assert (p50.diff, p50.diff_ci_low, p50.p_value, p50.p_adjusted) == (None, None, None, None), p50
        # review r10: the reason is the mixing campaign's, said once, under its own tag (was NEW:CONFOUNDED twice,
        # or BASE's reason filed under NEW)
        other = "NEW" if tag == "BASE" else "BASE"
        assert f"{tag}:CONFOUNDED" in p50.flags and f"{other}:CONFOUNDED" not in p50.flags, p50.flags
        assert len(p50.flags) == len(set(p50.flags)), p50.flags
        assert p50.sentence.startswith("Not comparable in mixed: 5 of 10 kubernetes runs timed provisioned"), \
            p50.sentence


def test_podtax_compare_of_a_campaign_of_unknown_start_against_a_known_one_is_not_comparable(tmp_path) -> None:
    """Review r9 M2: a side all of whose runs were parsed before the start flags, compared with a campaign whose
    runs' start is known, got a verdict: its start may be the other one."""
    change, alike = compared(tmp_path, batch_of("old", ["create"] * 10, old=True) + batch_of(
        "known", ["node"] * 10, first=100) + batch_of("old-again", ["create"] * 10, old=True, first=200),
        ("old", "known"), ("old", "old-again"))
    p50 = next(c for c in change.cells if c.metric == "provisioned_p50_ms")
    assert p50.verdict == "not comparable" and p50.diff is None and p50.p_value is None, p50.sentence
    assert "NEW:CONFOUNDED" in p50.flags, p50.flags
    assert "not recorded in old " in p50.sentence and "`podtax reparse` it" in p50.sentence, p50.sentence
    same = next(c for c in alike.cells if c.metric == "provisioned_p50_ms")
    assert "NEW:CONFOUNDED" not in same.flags, same.sentence  # both unknown: nothing known to differ
