"""A side whose median is 0 (audit hE, network): host UDP runs that lost no packet (lost_percent 0) against
pod runs that lost 2.5-3.0% in every run, p adj 0.011, were "Inconclusive: no ratio could be computed"; so
were 0 TCP retransmits on the host against 40-45 in the pod. The ratio is undefined, but the rank test and
the medians say which side is worse. Now the verdict is slower (or faster) when the test is significant,
the sentence says why there is no ratio, and both sides all 0 are equal. Real Result events in a real DuckDB
file, the real analyzer app and the real CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import exported_verdicts, serve

T0 = datetime(2026, 11, 2, 8, tzinfo=UTC)
SHUFFLE = (2, 0, 4, 1, 5, 3)  # the throughput's run order: no trend (DRIFT)
PARAMS = {"protocol": "udp", "duration": 2, "topology": "pod->pod"}
# campaign: (metric, unit, host values, pod values, verdict, the sentence's start); values in run order, shuffled (a
# side each run higher than the last is DRIFT)
CASES = {
    "loss": ("lost_percent", "%", [0.0] * 6, [2.7, 2.5, 2.9, 2.6, 3.0, 2.8], "slower",
             "Pod's lost_percent higher than host's (no ratio: the host median is 0; p = 0.0"),
    "retrans": ("retransmits", "count", [0.0] * 6, [42.0, 40, 44, 41, 45, 43], "slower",
                "Pod's retransmits more than host's (no ratio: the host median is 0; p = 0.0"),
    "none": ("lost_percent", "%", [0.0] * 6, [0.0] * 6, "no detectable difference",
             "Pod and host equal: every run of both sides measured 0 % (no ratio of zeros)"),
    # a level's ratio is "higher", not "slower" (an audit read "pod 2400.0% slower" for 2.5% loss against 0.1%)
    "small": ("lost_percent", "%", [0.1] * 6, [2.5, 2.5, 2.5, 2.6, 2.7, 2.8], "slower", "Pod 2450.0% higher"),
    # the pod's median 0 (audit hB2): "ratio 0.000, 95% CI 0.000 to 0.000", an interval of no width, and a
    # ratio no geometric mean can take; now the same treatment as the host's 0
    "zpod": ("lost_percent", "%", [1.1, 0.9, 1.3, 1.0, 1.4, 1.2], [0.0] * 6, "faster",
             "Pod's lost_percent lower than host's (no ratio: the pod median is 0; p = 0.0"),
    "rzpod": ("retransmits", "count", [5.0, 3, 7, 4, 8, 6], [0.0] * 6, "faster",
              "Pod's retransmits fewer than host's (no ratio: the pod median is 0; p = 0.0"),
    "noise": ("lost_percent", "%", [0.0, 0, 0, 0.1, 0, 0], [0.0, 0.1, 0, 0, 0, 0], "inconclusive",
              "Inconclusive: no ratio could be computed"),
}


def _runs(campaign: str, metric: str, unit: str, env: str, values: list[float], slot: int,
          day: int) -> list[events.Envelope]:
    out = []
    for i, value in enumerate(values):
        run = events.RunSpec(run_id=f"{campaign}-{env}-{i}", campaign=campaign, node="node-1", env=env,
                             test="iperf3", params=PARAMS, cluster="local", attempt=1, timeout_s=600)
        start = T0 + timedelta(days=day, minutes=10 * i + 5 * slot)
        res = events.Result(run=run, tool="iperf3", tool_version="3.12", parser_version="1",
                            metrics=[events.Metric(name="throughput_mbps", value=900.0 + SHUFFLE[i % 6] + slot,
                                                   unit="Mbit/s", higher_is_better=True),
                                     events.Metric(name=metric, value=value, unit=unit, higher_is_better=False)],
                            started_at=start, ended_at=start + timedelta(seconds=2))
        out.append(events.result(res, "test"))
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("zero") / "podtax.duckdb")
    for day, (name, (metric, unit, host, pod, _, _)) in enumerate(CASES.items()):
        s.write_batch(_runs(name, metric, unit, "host", host, 0, day)
                      + _runs(name, metric, unit, "kubernetes", pod, 1, day))
    yield s
    s.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_zero_median_still_gets_its_verdict(store, name):
    metric, unit, _, _, verdict, start = CASES[name]
    cells = TestClient(create_app(store)).get(f"/api/campaigns/{name}/comparisons").json()["cells"]
    cell = next(c for c in cells if c["metric"] == metric)
    assert (cell["ratio"] is None) is (name != "small"), cell
    assert cell["verdict"] == verdict, cell["sentence"]
    assert cell["sentence"].startswith(start), cell["sentence"]
    assert (cell["ci_low"] is None) is (name != "small"), cell
    words = {"slower": ("higher", "more"), "faster": ("lower", "fewer")}.get(verdict)
    assert cell["direction"] == (words and words[unit != "%"]), cell


def test_the_cli_table_html_and_csv_show_the_verdict(store, capsys, tmp_path):
    with serve(create_app(store)) as url:
        assert main(["report", "loss", "--api", url, "--all-metrics"]) == 0
        out = capsys.readouterr().out
        assert main(["report", "loss", "--api", url, "--html", str(tmp_path / "r.html")]) == 0
        assert main(["export", "loss", "--api", url, "--csv", str(tmp_path / "csv")]) == 0
    row = out[out.index("lost_percent") - 200:]
    assert "higher" in row[:600] and "slower" not in row[:600] and "no ratio" in row[:600], out
    html = (tmp_path / "r.html").read_text()  # secondary metrics: a table row each, no sentence
    at = html.index(">lost_percent<")
    assert ">higher<" in html[at:html.index(">throughput_mbps<", at)]
    rows = [r for r in (tmp_path / "csv" / "comparisons.csv").read_text().splitlines() if ",lost_percent," in r]
    assert ",slower," in rows[0] and "no ratio: the host median is 0" in rows[0], rows


@pytest.mark.parametrize(("name", "word"), [("loss", "higher"), ("small", "higher"), ("retrans", "more"),
                                           ("zpod", "lower"), ("rzpod", "fewer")])
def test_the_workbook_says_higher_and_more(store, tmp_path, name, word):
    """A level's and a count's verdict in the workbook is the sentence's word (it said "slower" for a higher
    lost_percent); comparisons.csv and .parquet have it in `direction`, beside the API's verdict."""
    metric = CASES[name][0]
    assert exported_verdicts(create_app(store), name, tmp_path)[metric] == (word, CASES[name][4], word, word)


def test_a_zero_pod_median_reads_the_same_in_the_table_html_json_and_summary(store, capsys, tmp_path):
    """The pod's 0 against the host's 1.15: no ratio or interval in the table and the HTML (they showed
    0.000 [0.000, 0.000]), the word "lower", and no geometric mean across nodes in the JSON summary."""
    with serve(create_app(store)) as url:
        assert main(["report", "zpod", "--api", url, "--all-metrics"]) == 0
        out = capsys.readouterr().out
        assert main(["report", "zpod", "--api", url, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert main(["report", "zpod", "--api", url, "--html", str(tmp_path / "r.html")]) == 0
    row = next(line for line in out.splitlines() if line.startswith("#") and " 1.15" in line)
    assert "no ratio" in row and "lower" in row and "0.000" not in row, out
    html = (tmp_path / "r.html").read_text()
    at = html.index(">lost_percent<")
    part = html[at:html.index(">throughput_mbps<", at)]
    assert ">lower<" in part and "0.000" not in part, part
    summary = next(s for s in data["summary"] if s["metric"] == "lost_percent")
    assert summary["geomean_ratio"] is None and summary["nodes_excluded"] == {"node-1": ["no ratio"]}, summary
