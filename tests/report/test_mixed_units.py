"""A metric whose runs came with different units (audit hF, item 8): host runs of fio's read_lat_mean in us (~104)
and pod runs in ms (~0.11), as a parser that changed its unit between versions would publish them, read "Pod 99.9%
faster than host (ratio 0.001 ...; pod median 0.1085 us)": the values were divided as if in one unit, and the pod's
median was labelled with the host's. Such a cell is now CONFOUNDED: no ratio, the sentence names each side's unit.
Real Result events in a real DuckDB file, the real analyzer app and the real CLI (report --json, export --csv)."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta

import pytest
from analysis_synth import metrics_event
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2026, 11, 3, 8, tzinfo=UTC)
ORDER = (0, 5, 2, 7, 1, 6, 3, 4)  # the runs' order: no trend (a monotone side is flagged DRIFT)
# campaign: (host values and unit, pod values and unit)
CASES = {
    "units": (([104.0 + i for i in ORDER], "us"), ([0.109 + i / 1000 for i in ORDER], "ms")),
    "mixed": (([104.0 + i for i in ORDER], "us"), ([0.115, 0.116, 0.117, 0.118, 115, 116, 117, 118], "ms")),
    "same": (([104.0 + i for i in ORDER], "us"), ([115.0 + i for i in ORDER], "us")),
    "onesided": (([0.104, 0.105, 0.106, 0.107, 104, 105, 106, 107], "ms"), ([], "us")),
}


def _runs(campaign: str, env: str, values: list[float], units: list[str], day: int, slot: int) -> list[events.Envelope]:
    return [metrics_event(f"{campaign}-{env}-{i}", campaign, "node-1", env,
                          T0 + timedelta(days=day, minutes=10 * i + 5 * slot), [("read_lat_mean", value, unit, False)],
                          test="fio", params={"rw": "randread", "bs": "4k"}, tool="fio", tool_version="fio-3.33",
                          seconds=2)
            for i, (value, unit) in enumerate(zip(values, units, strict=True))]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("units") / "podtax.duckdb")
    for day, (name, ((host, hunit), (pod, punit))) in enumerate(CASES.items()):
        # "mixed": the pod side's first four runs in ms, the last four in us
        pod_units = [punit] * 4 + ["us"] * 4 if name == "mixed" else [punit] * len(pod)
        host_units = [hunit] * 4 + ["us"] * 4 if name == "onesided" else [hunit] * len(host)
        s.write_batch(_runs(name, "host", host, host_units, day, 0)
                      + _runs(name, "kubernetes", pod, pod_units, day, 1))
    yield s
    s.close()


def _cell(url: str, name: str, capsys) -> dict:
    capsys.readouterr()
    assert main(["report", name, "--api", url, "--json"]) == 0
    return next(c for c in json.loads(capsys.readouterr().out)["cells"] if c["metric"] == "read_lat_mean")


def test_sides_in_different_units_are_not_divided(store, capsys, tmp_path):
    with serve(create_app(store)) as url:
        cell = _cell(url, "units", capsys)
        assert main(["export", "units", "--api", url, "--csv", str(tmp_path / "csv")]) == 0
    assert "CONFOUNDED" in cell["flags"] and cell["ratio"] is None and cell["verdict"] == "inconclusive", cell
    said = cell["flag_details"]["CONFOUNDED"]
    assert "host runs reported read_lat_mean in us and pod runs in ms" in said, said
    assert "0.1085 us" not in said and "99.9%" not in cell["sentence"], cell
    row = next(csv.DictReader((tmp_path / "csv" / "comparisons.csv").open()))
    assert row["ratio"] == "" and "CONFOUNDED" in row["flags"], row


def test_a_side_mixing_units_is_named(store, capsys):
    with serve(create_app(store)) as url:
        cell = _cell(url, "mixed", capsys)
    assert "CONFOUNDED" in cell["flags"] and cell["ratio"] is None, cell
    assert "and pod runs in ms + us" in cell["flag_details"]["CONFOUNDED"], cell


def test_one_unit_keeps_its_ratio(store, capsys):
    with serve(create_app(store)) as url:
        cell = _cell(url, "same", capsys)
    assert "CONFOUNDED" not in cell["flags"] and cell["verdict"] == "slower", cell
    assert cell["ratio"] == pytest.approx(118.5 / 107.5), cell


def test_one_side_mixing_units_is_named_when_the_other_has_no_runs(store, capsys):
    """A cell with runs on one side only (one environment, or the other's runs lost): its median over values in ms
    and us was shown unflagged (hF's left-out: confounded returned at once when a side was empty)."""
    with serve(create_app(store)) as url:
        cell = _cell(url, "onesided", capsys)
    assert "CONFOUNDED" in cell["flags"] and cell["ratio"] is None, cell
    assert "host runs reported read_lat_mean in ms + us" in cell["flag_details"]["CONFOUNDED"], cell
    assert cell["host_median"] is None, cell  # was 52.05 'ms', a median over ms and us values (review hR2)


def test_a_side_mixing_units_has_no_median_in_any_exit(store, capsys, tmp_path):
    with serve(create_app(store)) as url:
        for name in ("onesided", "mixed", "units"):
            assert main(["report", name, "--api", url]) == 0
            assert main(["report", name, "--api", url, "--html", str(tmp_path / f"{name}.html")]) == 0
            assert main(["export", name, "--api", url, "--xlsx", str(tmp_path / f"{name}.xlsx")]) == 0
            assert main(["export", name, "--api", url, "--csv", str(tmp_path / name)]) == 0
            row = next(r for r in csv.DictReader((tmp_path / name / "comparisons.csv").open())
                       if r["metric"] == "read_lat_mean")
            # "units": host in us, pod in ms; the pod's 0.1125 (ms) stood under the cell's unit (us) (review hR2)
            assert row["host_median"] == "" and row["pod_median"] == "", row


def test_a_side_mixing_units_gets_no_flag_computed_over_them(store, capsys):
    """Only CONFOUNDED speaks for a side whose runs mix units: its DRIFT, BIMODAL or OUTLIERS would be computed over
    0.115 (ms) and 115 (us) as one scale (hF's audit: "mixed" read DRIFT and BIMODAL as well)."""
    with serve(create_app(store)) as url:
        for name in ("mixed", "onesided"):
            cell = _cell(url, name, capsys)
            assert not {"DRIFT", "BIMODAL", "OUTLIERS"} & set(cell["flags"]), (name, cell["flags"])
            assert cell["outliers"] == [] and cell["pod_modes"] is None and cell["host_modes"] is None, cell
