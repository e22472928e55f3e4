"""sysbench's `events` under `--events=N`: every run that did its work counted N events, so the count is set by
the parameters, not measured. The report gave it a verdict all the same ("no detectable difference", 95% CI
1.000 to 1.000, in the workbook and under --all-metrics, beside an events_per_second 7% slower). It is now "set
by the parameters" in every output, with no ratio, interval or p-value; with events=0 the run lasts `--time`
and its count is a throughput, which keeps its verdict. Planted logs (a corpus log with its numbers edited)
through the real `podtax import`, a real nats-server, the parser and analyzer in this process, and the real
CLI's report, workbook and CSV."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import openpyxl
import pytest

from tests.integration.importing import cli as _cli
from tests.integration.importing import imported, paired_manifest

LOG = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log"
RUNS = 10  # a side
# campaign: (its params, the events each run counted as a function of its rate, the events cell's verdict)
CASES = {
    "fixed": ("threads=1 max_prime=100000 events=200 time=0", lambda rate: 200, "set by the parameters"),
    "timed": ("threads=1 max_prime=100000 events=0 time=10", lambda rate: round(rate * 10), "slower"),
}


def planted(rate: float, events: int) -> str:
    """The corpus log (200 events at 183.01 events/s) with another rate and event count, its times to match."""
    total, avg = events / rate, 1000 / rate
    subs = {"183.01": f"{rate:.2f}", "1.0916s": f"{total:.4f}s", "events:              200":
            f"events:              {events}", "5.42": f"{avg * 0.99:.2f}", "5.45": f"{avg:.2f}",
            "5.71": f"{avg * 1.05:.2f}", "5.47": f"{avg * 1.01:.2f}", "1090.64": f"{total * 999:.2f}",
            "200.0000/0.00": f"{events:.4f}/0.00", "1.0906/0.00": f"{total * 0.999:.4f}/0.00"}
    return re.sub("|".join(map(re.escape, subs)), lambda m: subs[m.group(0)], LOG.read_text())


def manifest(folder: Path, name: str) -> Path:
    """RUNS host logs near 183 events/s and RUNS pod logs near 170 (7% slower), interleaved an hour apart, each
    campaign in a month of its own."""
    params, events, _ = CASES[name]

    def log(env: str, i: int) -> str:
        rate = 183.0 + 0.3 * (i % 4) if env == "host" else 170.0 + 0.3 * (i % 3)
        return planted(rate, events(rate))

    # the campaigns never overlap on the node
    return paired_manifest(folder, name, test="sysbench-cpu", params=params, month=3 + list(CASES).index(name),
                           runs=RUNS, log=log)


async def test_an_event_count_the_parameters_fix_gets_no_verdict(nats_url: str, tmp_path: Path, capsys,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    monkeypatch.setenv("COLUMNS", "200")
    async with imported(nats_url, tmp_path, {name: manifest(tmp_path, name) for name in CASES}) as url:
        for name, (_, _, verdict) in CASES.items():
            capsys.readouterr()
            assert await _cli("report", name, "--api", url, "--json") == 0
            cells = {c["metric"]: c for c in json.loads(capsys.readouterr().out)["cells"]}
            events, rate = cells["events"], cells["events_per_second"]
            assert rate["verdict"] == "slower", rate["sentence"]  # the speed the runs measured
            assert events["verdict"] == verdict, (name, events["sentence"])
            if verdict != "set by the parameters":
                continue
            assert {k: events[k] for k in ("ratio", "ci_low", "ci_high", "p_value", "p_adjusted")} == \
                dict.fromkeys(("ratio", "ci_low", "ci_high", "p_value", "p_adjusted"))
            assert events["sentence"].startswith("Set by the parameters: events=200 fixes events"), events["sentence"]

            assert await _cli("report", name, "--api", url, "--all-metrics") == 0
            row = next(x for x in capsys.readouterr().out.splitlines() if "events " in x and "events_per" not in x)
            assert "set by the parameters" in row and "no ratio" in row, row

            html, xlsx, folder = tmp_path / f"{name}.html", tmp_path / f"{name}.xlsx", tmp_path / f"{name}-csv"
            assert await _cli("report", name, "--api", url, "--html", str(html)) == 0
            full = html.read_text().split('id="full-table"')[1]
            row_of_events = r"<td>events</td>((?!</tr>).)*<td>set by the parameters</td>"
            assert re.search(row_of_events, full), "the full table's events row"
            assert await _cli("export", name, "--api", url, "--xlsx", str(xlsx)) == 0
            assert await _cli("export", name, "--api", url, "--csv", str(folder)) == 0
            table = list(openpyxl.load_workbook(io.BytesIO(xlsx.read_bytes()))["summary"].iter_rows(values_only=True))
            head = next(r for r in table if r[0] == "node" and "verdict" in r)
            got = {r[3]: dict(zip(head, r, strict=False)) for r in table[table.index(head) + 1:] if r[0] == "node-1"}
            assert got["events"]["verdict"] == "set by the parameters" and got["events"]["ratio"] is None
            exported = {r["metric"]: r for r in csv.DictReader((folder / "comparisons.csv").open())}
            assert exported["events"]["verdict"] == "set by the parameters" and exported["events"]["ratio"] == ""
