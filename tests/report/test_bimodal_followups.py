"""BIMODAL follow-ups (audit a4, item 6). The HTML said "(median X, between them)" also when the median lay inside
the larger of two unequal modes (4 and 8 runs), and its strip plot drew one median bar between the modes; two
modes 0.5% apart, closer than the ±1% threshold, withheld the ratio; `podtax compare` of two campaigns whose host
sides were both bimodal named only the first and showed no modes. Real result events in a real DuckDB file, the
real analyzer app (report page, comparisons, compare) and the real CLI's compare."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.analysis.analysis_synth import sysbench_results
from tests.report.conftest import serve

T0 = datetime(2025, 2, 3, 8, tzinfo=UTC)


def _two_modes(low: float, high: float, n_low: int, n_high: int, step: float) -> list[float]:
    """n_low runs near `low` and n_high near `high`, interleaved (no drift), each a little apart."""
    lows = [low + step * (i - n_low // 2) for i in range(n_low)]
    highs = [high + step * (i - n_high // 2) for i in range(n_high)]
    out = []
    while lows or highs:
        out += [lows.pop()] if lows else []
        out += [highs.pop(), highs.pop()] if len(highs) > len(lows) + 1 else [highs.pop()] if highs else []
    return out


POD = [170.0 + 0.3 * (i % 4) for i in range(12)]
# campaign: (host values, what the HTML cell detail says of the host side)
CASES = {
    "equal": (_two_modes(128.3, 182.6, 6, 6, 0.1), "(median 155.4, between the modes)"),
    "unequal": (_two_modes(128.3, 182.6, 4, 8, 0.1), "(median 182.3, inside the 182.6 mode)"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("bimodal2") / "podtax.duckdb")
    for day, (name, (host, _)) in enumerate(CASES.items()):
        s.write_batch(sysbench_results(name, host, POD, t0=T0 + timedelta(days=day)))
    # modes 0.5% apart (6 near 6.160 and 6 near 6.190): closer than the 1% threshold
    s.write_batch(sysbench_results("close", _two_modes(6.160, 6.190, 6, 6, 0.0004), [6.0 + 0.001 * (i % 4)
                                                                                     for i in range(12)],
                                   t0=T0 + timedelta(days=5)))
    yield s
    s.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_median_is_placed_where_it_lies_and_the_plot_draws_the_modes(store, name):
    client = TestClient(create_app(store))
    (cell,) = client.get(f"/api/campaigns/{name}/comparisons").json()["cells"]
    assert "BIMODAL" in cell["flags"], cell["sentence"]
    low, high = (m["median"] for m in cell["modes"]["host"]["modes"])
    html = client.get(f"/report/{name}").text
    detail = html.split(f'id="cell-{cell["id"]}"')[1].split("</div>")[0]
    assert f"host modes {cell['host_modes']} {CASES[name][1]}" in detail, detail
    strip = detail.split('class="strip"')[1].split("</svg>")[0]
    host_row = strip.split("pod (n=")[0]
    bars = re.findall(r">(median|mode) ([\d.,]+)</text>", host_row)
    assert bars == [("mode", f"{low:.1f}"), ("mode", f"{high:.1f}")], bars  # no median bar between them


def test_modes_closer_than_the_threshold_do_not_withhold_the_ratio(store):
    (cell,) = TestClient(create_app(store)).get("/api/campaigns/close/comparisons").json()["cells"]
    assert "BIMODAL" not in cell["flags"] and cell["ratio"] is not None, cell["sentence"]
    assert any("two modes 0.5% apart, closer than the ±1.0% threshold" in w for w in cell["warnings"]), cell


def test_compare_names_every_bimodal_campaign_with_its_modes(store, capsys):
    client = TestClient(create_app(store))
    modes = {name: client.get(f"/api/campaigns/{name}/comparisons").json()["cells"][0]["host_modes"]
             for name in CASES}
    (c,) = client.get("/api/compare", params={"base": "equal", "new": "unequal"}).json()["cells"]
    assert c["verdict"] == "inconclusive", c["sentence"]
    assert c["sentence"].startswith("Inconclusive: equal and unequal have no pod/host ratio"), c["sentence"]
    for name in CASES:
        assert f"{name}: its flags BIMODAL withhold it: host modes {modes[name]}" in c["sentence"], c["sentence"]
    with serve(create_app(store)) as url:
        assert main(["compare", "equal", "unequal", "--api", url]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"host modes {modes['unequal']}" in out, out
