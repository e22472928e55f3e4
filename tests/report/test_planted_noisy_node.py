"""A planted campaign with one noisy node among four (audit hB2): three nodes measure the pod 5% slower within
about 1%, the fourth, noisy, 15% slower with an interval of about 0.6 to 1.2. The cross-node summary averaged
the four ratios alike and read "pod 7.5% slower", a tax no steady node has, with no word of the noise. Now it
names the node whose interval is over 4 times as wide as the others' and gives the mean without it too. Real
result events in a real DuckDB file, the real analyzer app and the real CLI (report --json and the table)."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta

import pytest
from analysis_synth import result_event
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 9, 1, 8, tzinfo=UTC)
STEADY = [1000.0, 1003.0, 998.0, 1001.0, 999.0, 1002.0, 1000.5, 997.5, 1001.5, 999.5]
NOISY_HOST = [1000.0, 1300.0, 700.0, 1150.0, 850.0, 1250.0, 750.0, 1100.0, 900.0, 1000.0]
NOISY_POD = [850.0, 1150.0, 560.0, 1000.0, 700.0, 1100.0, 600.0, 950.0, 750.0, 850.0]


def _node(campaign: str, node: str, host: list[float], pod: list[float], day: int) -> list:
    out = []
    for i, (h, p) in enumerate(zip(host, pod, strict=True)):
        start = T0 + timedelta(days=day, minutes=6 * i)
        out.append(result_event(f"{campaign}-{node}-h{i}", campaign, node, "host", h, start))
        out.append(result_event(f"{campaign}-{node}-p{i}", campaign, node, "kubernetes", p,
                                start + timedelta(minutes=3)))
    return out


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("noisy") / "podtax.duckdb")
    out = []
    for node in ("node-1", "node-2", "node-4"):
        out += _node("noisy", node, STEADY, [v * 0.95 for v in STEADY], 0)
        out += _node("steady", node, STEADY, [v * 0.95 for v in STEADY], 1)
    out += _node("noisy", "node-3", NOISY_HOST, NOISY_POD, 0)
    store.write_batch(out)
    with serve(create_app(store)) as u:
        yield u
    store.close()


def test_a_noisy_node_is_named_and_the_mean_given_without_it(url, capsys, monkeypatch):
    assert main(["report", "noisy", "--api", url, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    (s,) = body["summary"]
    noisy = next(c for c in body["cells"] if c["node"] == "node-3")
    assert noisy["verdict"] == "inconclusive" and s["geomean_ratio"] < 0.93  # the plain mean, pulled by node-3
    rest = [c for c in body["cells"] if c["node"] != "node-3"]
    said = (f"node-3's interval ({noisy['ci_low']:.3f} to {noisy['ci_high']:.3f}) is over 4 times as wide as the "
            "other nodes': a noisy node's ratio moves the mean as much as a steady one's; without it the geometric "
            f"mean is 0.950 ({_mean(rest, 'ci_low'):.3f} to {_mean(rest, 'ci_high'):.3f}, pod 5.0% slower).")
    assert said in s["sentence"], s["sentence"]
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["report", "noisy", "--api", url]) == 0
    assert said in re.sub(r"\s+", " ", capsys.readouterr().out)


def test_steady_nodes_say_nothing_of_it(url, capsys):
    assert main(["report", "steady", "--api", url, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    (s,) = body["summary"]
    cells = body["cells"]
    assert "times as wide" not in s["sentence"]
    assert f"0.950 ({_mean(cells, 'ci_low'):.3f} to {_mean(cells, 'ci_high'):.3f}, pod 5.0% slower)" in s["sentence"]


def _mean(cells: list[dict], key: str) -> float:
    """The geometric mean of the cells' ``key`` (the ends of the summary's interval)."""
    return math.exp(sum(math.log(c[key]) for c in cells) / len(cells))
