"""Control-plane runs with stuck objects in `podtax report` (audit i, finding 1): the parser flags such a run
ERRORS ("3 of 20 objects failed (first: ...)") and LEFT_BEHIND and leaves out its makespans and wall time, yet
no report output showed either flag, the makespan cell said "6 more kubernetes runs are needed" although all 6
ran, and the per-object latencies of the surviving objects got verdicts with nothing saying that some objects
never finished. Now every cell of such runs' node, test and params carries ERRORS and LEFT_BEHIND with how
many objects of how many runs, and what the first lacked. Timelines go through the real parser into a real
DuckDB file, served by the real analyzer app, read by the real CLI: --json, the table, --html and --xlsx."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import openpyxl
import pytest
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.store import Store
from timeline_synth import timeline_text

from tests.report.conftest import cli_output, serve_batches, timeline_run

RUNS, COUNT = 6, 20
NOT_BOUND = "not Bound after 2.5 s of the bind wait (no object progressed for 2 s: given up, the run went on)"
# node: how many of the 6 kubernetes runs had 2 claims never bound and 1 PV never deleted
CASES = {"all-stuck": 6, "two-stuck": 2, "clean": 0}


def _stuck(text: str) -> str:
    """Objects 0004 and 0009 never bound, 0013's PV never deleted: as the runner records them."""
    lines = [json.loads(x) for x in text.splitlines()]
    for obj in lines[1:-1]:
        n = int(obj["name"][-4:])
        if n in (4, 9):
            obj["t"] = {k: v for k, v in obj["t"].items() if k in ("request_sent", "api_accepted", "pv_created")}
            obj["error"] = NOT_BOUND
        elif n == 13:
            del obj["t"]["pv_gone"]
            obj["error"] = "PV not deleted within 30 s"
    lines[-1].update(errors=3, left_behind=1)
    lines[-1]["requests"]["list"] = 150  # cleanup polling for the PV left behind (the runner counts it)
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def _events(node: str, stuck_runs: int, campaign: str = "cps", day: int = 0) -> list[events.Envelope]:
    out: list[events.Envelope] = []
    for seq in range(2 * RUNS):
        env = "nomad" if seq % 2 else "kubernetes"
        run = events.RunSpec(run_id=f"{campaign}-{node}-{seq}", campaign=campaign, node=node, env=env,
                             test="volume-churn", params={"count": COUNT}, sequence=seq)
        text = timeline_text("volume-churn", env, COUNT, seed=seq, scale=1.0 if env == "kubernetes" else 0.5)
        if env == "kubernetes" and seq // 2 < stuck_runs:
            text = _stuck(text)
        started = datetime(2026, 12, 1 + day, 2, tzinfo=UTC) + timedelta(seconds=10 * seq)
        out += timeline_run(run, text, started, 2)
    return out


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    batches = [*(_events(node, stuck) for node, stuck in CASES.items()),
               _events("all-stuck", 0, "cpok", day=1)]  # the same cell without stuck objects
    with serve_batches(tmp_path_factory.mktemp("stuck"), batches) as u:
        yield u


@pytest.fixture(scope="module")
def cells(url):
    # the default Holm: min and avg of each phase are descriptive, in no family, so 6 runs a side still give verdicts
    report = json.loads(cli_output("report", "cps", "--json", "--api", url))
    return {(c["node"], c["metric"]): c for c in report["cells"]}


@pytest.mark.parametrize("node", CASES)
def test_every_cell_of_stuck_runs_says_how_many_objects_failed(cells, node):
    stuck = CASES[node]
    mine = {m: c for (n, m), c in cells.items() if n == node}
    assert len(mine) > 20
    for metric, c in mine.items():
        if not stuck:
            assert not {"ERRORS", "LEFT_BEHIND"} & set(c["flags"]), (metric, c["flags"])
            continue
        assert {"ERRORS", "LEFT_BEHIND"} <= set(c["flags"]), (metric, c["flags"])
        errors = c["flag_details"]["ERRORS"]
        assert (f"{3 * stuck} of {COUNT * RUNS} kubernetes objects failed, in {stuck} of its {RUNS} runs "
                f"(first: ") in errors and NOT_BOUND in errors, errors
        assert (f"{stuck} objects in {stuck} of the {RUNS} kubernetes runs were not deleted"
                in c["flag_details"]["LEFT_BEHIND"]), c["flag_details"]["LEFT_BEHIND"]
        if metric.startswith("provisioned_p"):  # figures of the survivors, said as such
            share = f"{100 * 3 * stuck / (COUNT * RUNS):.1f}%"
            assert f"{share} of kubernetes objects never finished" in errors, errors
            assert f"of the {COUNT * RUNS - 3 * stuck} that did" in errors, errors


@pytest.mark.parametrize("node", CASES)
def test_a_makespan_lost_to_failed_objects_is_not_too_few_runs(cells, node):
    stuck = CASES[node]
    c = cells[node, "provisioned_makespan_s"]
    assert (c["n_host"], c["n_pod"]) == (RUNS - stuck, RUNS)
    if not stuck:
        assert c["verdict"] == "faster" and "INSUFFICIENT" not in c["flags"], c["sentence"]
        return
    assert "more kubernetes runs" not in c["sentence"] + c["flag_details"]["INSUFFICIENT"]
    assert (f"as {stuck} of the {RUNS} kubernetes runs had failed objects (ERRORS). More runs will not help "
            f"until no object fails") in c["flag_details"]["INSUFFICIENT"], c["flag_details"]["INSUFFICIENT"]
    if stuck == RUNS:
        assert c["verdict"] == "not comparable"
        assert c["sentence"].startswith("Not comparable: runs with failed objects have no provisioned_makespan_s: "
                                        "kubernetes has 0 runs with it"), c["sentence"]
        assert "a ratio needs runs on both sides" not in c["sentence"]


def test_html_and_workbook_show_the_flags(url, tmp_path, capsys):
    page, book = tmp_path / "cps.html", tmp_path / "cps.xlsx"
    assert main(["report", "cps", "--api", url, "--html", str(page)]) == 0
    assert main(["export", "cps", "--api", url, "--xlsx", str(book)]) == 0
    assert main(["report", "cps", "--api", url]) == 0
    table = capsys.readouterr().out
    assert "ERRORS" in table and "LEFT_BEHIND" in table
    html = page.read_text()
    assert "18 of 120 kubernetes objects failed" in html and "ERRORS" in html and "LEFT_BEHIND" in html
    text = " ".join(str(v) for ws in openpyxl.load_workbook(book) for row in ws.iter_rows(values_only=True)
                    for v in row if v is not None)
    assert "18 of 120 kubernetes objects failed" in text and "LEFT_BEHIND" in text


def test_compare_says_the_makespan_was_lost_to_failed_objects(url, capsys):
    """`podtax compare` said "cps ran nomad, so they share no nomad/kubernetes ratio" although cps ran both."""
    assert main(["compare", "cpok", "cps", "--json", "--api", url]) == 0
    cells = {c["metric"]: c for c in json.loads(capsys.readouterr().out)["cells"]}
    c = cells["provisioned_makespan_s"]
    assert c["verdict"] == "not comparable"
    assert c["sentence"].startswith("Not comparable: cps ran both sides but has no nomad/kubernetes ratio: cps: "
                                    "runs with failed objects have no provisioned_makespan_s: kubernetes has 0 "
                                    "runs with it and nomad 6, as 6 of the 6 kubernetes runs had failed objects"), \
        c["sentence"]
    assert "ran nomad" not in c["sentence"]
    assert cells["provisioned_p50_ms"]["verdict"] != "not comparable"


# metric: how nomad differs from kubernetes on node all-stuck (requests: (20 + 20 + 2) / 20 against
# (20 + 20 + 2 + 150) / 20 per object)
COUNTS = {"objects_ok": "17.6% more", "requests_per_object": "78.1% fewer"}


@pytest.mark.parametrize("metric", sorted(COUNTS))
def test_counts_are_more_or_fewer_never_faster(cells, url, metric, capsys):
    """A count is not a speed: "nomad 100.0% faster" for errors, "91.5% faster" for requests (audit i #10)."""
    c = cells["all-stuck", metric]
    assert c["ratio"] != 1.0 and c["unit"] in ("count", "requests")
    assert c["sentence"].startswith("Nomad ") and f"{COUNTS[metric]} than kubernetes" in c["sentence"], \
        c["sentence"]
    assert "% faster" not in c["sentence"] and "% slower" not in c["sentence"], c["sentence"]
    assert main(["report", "cps", "--all-metrics", "--api", url]) == 0
    out = capsys.readouterr().out  # the table's effect column (wide or stacked, as the terminal allows)
    pct = COUNTS[metric].split()[0]
    assert f"nomad {COUNTS[metric]}" in out, out
    assert f"nomad {pct} faster" not in out and f"nomad {pct} slower" not in out, out
    # a duration keeps its words
    assert "% faster" in cells["all-stuck", "provisioned_p50_ms"]["sentence"]


def test_no_errors_on_one_side_are_fewer_without_a_ratio(cells):
    """nomad 0 errors against kubernetes 3 read "100.0% fewer" (a ratio of 0 with an interval of no width): no
    ratio now, as for a baseline median of 0, and the count's word."""
    c = cells["all-stuck", "errors"]
    assert c["ratio"] is None and c["direction"] == "fewer", c
    assert c["sentence"].startswith("Nomad's errors fewer than kubernetes's (no ratio: the nomad median is 0; "), \
        c["sentence"]


def test_the_phase_table_says_a_makespan_was_lost_to_failed_objects(tmp_path):
    """Its note said "no kubernetes run has measured provisioned yet" beside that phase's p50 (audit i, 1)."""
    from podtax_analyzer.comparisons import compare_campaign
    from podtax_analyzer.phase_table import phase_table

    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(_events("all-stuck", RUNS))
        table = phase_table(compare_campaign(store.cursor(), "cps"))
    finally:
        store.close()
    row = next(r for r in table.rows if r.phase == "provisioned" and r.statistic == "makespan")
    assert row.n_baseline == 0 and row.note is not None, row
    assert "no kubernetes run has a provisioned makespan: runs with failed objects have none (see ERRORS)" \
        in row.note, row.note
    assert not any("has measured provisioned yet" in n for n in table.notes), table.notes
