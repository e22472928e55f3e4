"""Planted campaigns (audit of Dec 4) whose words contradicted the cell's own direction: a level's (lost_percent)
second group of host runs was said to be "47.6% faster than the host median" (lower loss), and a count's
(retransmits) secondary-metric note said its own verdict was "(slower)" while its table, JSON direction and
sentence said "more". A lost_percent of 0 on every pod run (ratio 0.000, its interval 0.000 to 0.000) or on every
host run (no ratio) was left out of the summary as having "no interval". Both sides mixing the same two builds
were flagged CONFOUNDED without naming them ("host runs mixed 2 tool builds"). Real result events in a real DuckDB file,
the real analyzer app and the real CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from analysis_synth import metrics_event, result_event
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 7, 7, 8, tzinfo=UTC)
UDP = {"protocol": "udp", "duration": 2, "bitrate": "1G"}
TCP = {"protocol": "tcp", "duration": 2}
# host lost_percent: 10 runs near 0.25 %, 2 at 0.13 % (a second group, lower); pod near 1.1 %
LOSS_HOST = [0.25, 0.24, 0.26, 0.25, 0.245, 0.255, 0.25, 0.248, 0.13, 0.131]
LOSS_POD = [1.10, 1.12, 1.08, 1.11, 1.09, 1.10, 1.13, 1.07, 1.10, 1.11]
RETRANSMITS = ([4, 5, 6, 5, 4, 6, 5, 5, 4, 6], [20, 22, 19, 21, 23, 20, 22, 21, 20, 22])


def _cell(campaign: str, day: int, params: dict, host: list[float], pod: list[float], metrics) -> list:
    """Result events, host and pod alternating 3 minutes apart from ``day`` (campaigns never overlap);
    ``metrics`` (name, unit, higher is better, f) give each run's metrics from its planted value."""
    out = []
    for i, (env, v) in enumerate(x for pair in zip(host, pod, strict=True)
                                 for x in (("host", pair[0]), ("kubernetes", pair[1]))):
        out.append(metrics_event(f"{campaign}-{i}", campaign, "node-1", env, T0 + timedelta(days=day, minutes=3 * i),
                                 [(name, f(v), unit, hib) for name, unit, hib, f in metrics], test="iperf3",
                                 params=params, tool="iperf3", tool_version="3.12", seconds=2))
    return out


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("words") / "podtax.duckdb")
    store.write_batch(_cell("loss", 0, UDP, LOSS_HOST, LOSS_POD, [("lost_percent", "%", False, float)]))
    # retransmits vary, throughput the same on both sides within 0.1%: the primary says no detectable difference
    store.write_batch(_cell("retr", 1, TCP, *RETRANSMITS, [("retransmits", "count", False, float),
                                                       ("throughput_mbps", "Mbit/s", True,
                                                        lambda v: 10_000 + (v % 3))]))
    # lost_percent 0 on every pod run, and on every host run: no ratio either way (cell_sentences.zero_median)
    store.write_batch(_cell("zpod", 2, UDP, LOSS_POD, [0.0] * 10, [("lost_percent", "%", False, float)]))
    store.write_batch(_cell("zhost", 3, UDP, [0.0] * 10, LOSS_POD, [("lost_percent", "%", False, float)]))
    with serve(create_app(store)) as u:
        yield u
    store.close()


def _cells(url: str, campaign: str, capsys) -> dict[str, dict]:
    assert main(["report", campaign, "--api", url, "--json"]) == 0
    return {c["metric"]: c for c in json.loads(capsys.readouterr().out)["cells"]}


def test_a_second_group_of_a_level_is_lower_not_faster(url, capsys):
    c = _cells(url, "loss", capsys)["lost_percent"]
    assert c["direction"] == "higher" and "OUTLIERS" in c["flags"]
    said = "2 of 10 host runs (0.1300, 0.1310 %) were 47.6% lower than the host median of 0.2490 %"
    assert said in c["flag_details"]["OUTLIERS"] and said in c["sentence"], c["sentence"]
    assert "faster" not in c["sentence"] + c["flag_details"]["OUTLIERS"]


def test_a_secondary_count_says_its_own_direction(url, capsys):
    cells = _cells(url, "retr", capsys)
    assert cells["throughput_mbps"]["verdict"] == "no detectable difference"
    c = cells["retransmits"]
    assert (c["verdict"], c["direction"]) == ("slower", "more")
    assert "this metric's own verdict (more) is corrected among secondary metrics" in c["sentence"], c["sentence"]
    assert "slower" not in c["sentence"]


@pytest.mark.parametrize(("campaign", "word"), [("zpod", "lower"), ("zhost", "higher")])
def test_a_zero_median_is_left_out_of_the_summary_for_what_it_is(url, capsys, campaign, word):
    assert main(["report", campaign, "--api", url, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    (c,), (s,) = body["cells"], body["summary"]
    assert c["ratio"] is None and c["direction"] == word, c["sentence"]
    why = "no ratio"
    assert s["nodes_excluded"] == {"node-1": [why]} and f"Excluded: node-1 ({why})." in s["sentence"]


def test_builds_both_sides_mix_are_named(tmp_path, capsys):
    store = Store(tmp_path / "podtax.duckdb")
    t0 = T0 + timedelta(days=9)
    store.write_batch([result_event(f"mix-{env}-{i}", "mix", "node-1", env, 1000.0 + i,
                                    t0 + timedelta(minutes=3 * k + 6 * i), tool_version=("1.0.18", "1.0.20")[i % 2])
                       for i in range(8) for k, env in enumerate(("host", "kubernetes"))])
    with serve(create_app(store)) as u:
        (c,) = _cells(u, "mix", capsys).values()
    store.close()
    assert "CONFOUNDED" in c["flags"] and c["ratio"] is None
    said = ("host runs mixed 2 tool builds (sysbench 1.0.18 + sysbench 1.0.20); pod runs mixed 2 tool builds "
            "(sysbench 1.0.18 + sysbench 1.0.20)")
    assert said in c["flag_details"]["CONFOUNDED"], c["flag_details"]
