"""sockperf runs with too few messages for a tail percentile (FEW_OBSERVATIONS, parsers/sockperf.py) leave it
out. The import said nothing of them, and a cell of such a percentile with runs on one side only asked for "6
more pod runs", which would never add it. Now the import (and its dry run) warns, naming the log and the flag,
and the cell says its runs timed too few messages for it. Real captures parsed by the real parser, a real
DuckDB file, the real analyzer app and the real CLI entry point."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from podtax import events, parsers
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 3, 3, 8, tzinfo=UTC)
NET = Path(__file__).resolve().parents[1] / "corpus-net"
MANY, FEW = "sockperf-pp-tcp-64-fullrtt.log", "sockperf-pp-tcp-mps10-few.log"  # the few: 14 messages timed
PARAMS = {"protocol": "tcp", "duration": 2, "msg_size": 64}


def _runs(env: str, log: str, n: int, slot: int, campaign: str = "few") -> list[events.Envelope]:
    parsed = parsers.parse_run("sockperf", (NET / log).read_text(), requested=PARAMS)
    out = []
    for i in range(n):
        run = events.RunSpec(run_id=f"{campaign}-{env}-{slot}-{i}", campaign=campaign, node="node-1", env=env,
                             test="sockperf",
                             params=PARAMS, cluster="local", attempt=1, timeout_s=600)
        start = T0 + timedelta(days=campaign != "few", minutes=12 * i + 3 * slot)  # never overlapping
        metrics = [events.Metric(name=m.name, value=m.value * (1 + 0.001 * i), unit=m.unit,
                                 higher_is_better=m.higher_is_better) for m in parsed.metrics]
        res = events.Result(run=run, tool="sockperf", tool_version=parsed.tool_version, parser_version="1",
                            metrics=metrics, flags=list(parsed.flags), started_at=start,
                            ended_at=start + timedelta(seconds=2))
        out.append(events.result(res, "test"))
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("few") / "podtax.duckdb")
    s.write_batch(_runs("host", MANY, 8, 0) + _runs("kubernetes", FEW, 8, 1))
    # "some": 3 of the 11 pod runs timed too few for the tail percentiles, 8 did
    s.write_batch(_runs("host", MANY, 8, 0, "some") + _runs("kubernetes", MANY, 8, 1, "some")
                  + _runs("kubernetes", FEW, 3, 2, "some"))
    # "one": 1 host run has the tail percentiles, the 8 pod runs none (slots 3 and 7: never overlapping the others)
    s.write_batch(_runs("host", MANY, 1, 3, "one") + _runs("kubernetes", FEW, 8, 7, "one"))
    yield s
    s.close()


@pytest.fixture(scope="module")
def cells(store):
    return {c["metric"]: c for c in TestClient(create_app(store)).get("/api/campaigns/few/comparisons").json()["cells"]}


def test_a_percentile_the_pod_runs_had_too_few_messages_for_says_why(cells):
    c = cells["rtt_p99_us"]  # the host's 2-s runs have it, the pod's 14-message runs do not
    assert c["verdict"] == "not comparable" and c["n_host"] == 8 and c["n_pod"] == 0
    why = c["flag_details"]["INSUFFICIENT"]
    assert why.startswith("Too few observations for rtt_p99_us: 8 pod runs timed too few to report it "
                          "(parser said: \"FEW_OBSERVATIONS: sockperf timed 14 messages"), why
    assert "More runs like these will not help" in why and "more pod runs" not in why
    assert c["sentence"].startswith(f"Not comparable: t{why[1:]}"), c["sentence"]


def test_a_percentile_both_sides_report_is_compared_as_before(cells):
    c = cells["rtt_p50_us"]
    assert c["n_host"] == c["n_pod"] == 8 and c["ratio"] is not None
    assert "INSUFFICIENT" not in c["flags"] and "observations" not in c["sentence"]


HEADER = "file,node,env,test,params,started_at,tool_version\n"


@pytest.mark.parametrize("log", [MANY, FEW])
def test_the_import_dry_run_warns_of_few_observations(log, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:1")  # no server: a dry run needs none
    shutil.copy(NET / log, tmp_path / "run.log")
    (tmp_path / "m.csv").write_text(HEADER + "run.log,node-1,host,sockperf,protocol=tcp duration=2 msg_size=64,"
                                             "2024-03-01T10:00:00Z,\n")
    assert main(["import", str(tmp_path / "m.csv"), "--campaign", "old", "--dry-run"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    if log == MANY:
        assert "FEW_OBSERVATIONS" not in err and "warning" not in err, err
    else:
        assert "line 2: run.log: FEW_OBSERVATIONS: sockperf timed 14 messages, too few for rtt_p99_999_us" in err, err
        assert "1 of 1 log(s) timed too few observations for some percentiles (FEW_OBSERVATIONS)" in err, err


def test_the_parsers_flag_names_what_the_analyzer_reads_back():
    """One contract (podtax.flags): the parser builds its FEW_OBSERVATIONS run flag with few_observations_flag,
    and the import and the analyzer find it by FEW_RUN_FLAG and read the metrics it names with FEW_NAMED: exactly
    the percentiles the run left out (the prefix was spelled in four places)."""
    import re

    from podtax.flags import FEW_NAMED, FEW_RUN_FLAG

    parsed = parsers.parse_run("sockperf", (NET / FEW).read_text(), requested=PARAMS)
    many = {m.name for m in parsers.parse_run("sockperf", (NET / MANY).read_text(), requested=PARAMS).metrics}
    flag = next(f for f in parsed.flags if f.startswith(FEW_RUN_FLAG))
    named = (m := re.match(FEW_NAMED, flag)) and m.group(1).split(", ")
    assert named and set(named) == many - {m.name for m in parsed.metrics}, (named, flag)


def test_a_side_where_some_runs_timed_too_few_is_flagged(store, capsys, tmp_path, monkeypatch):
    """8 of the 11 pod runs have rtt_p99_us, 3 timed too few messages for it: enough runs for a verdict, but the
    pod median is of the 8 that timed the most (it said nothing of the 3). Now the cell is flagged FEW_OBSERVATIONS,
    saying how many of how many, in the JSON, the terminal report and the HTML."""
    monkeypatch.setenv("COLUMNS", "200")
    with serve(create_app(store)) as url:
        assert main(["report", "some", "--api", url, "--json"]) == 0
        cells = {c["metric"]: c for c in json.loads(capsys.readouterr().out)["cells"]}
        assert main(["report", "some", "--api", url, "--all-metrics"]) == 0
        table = " ".join(capsys.readouterr().out.split())
        assert main(["report", "some", "--api", url, "--html", str(tmp_path / "r.html")]) == 0
    c = cells["rtt_p99_us"]
    assert (c["n_host"], c["n_pod"]) == (8, 8) and c["ratio"] is not None and "INSUFFICIENT" not in c["flags"], c
    why = c["flag_details"].get("FEW_OBSERVATIONS", "")
    assert why.startswith("Too few observations for rtt_p99_us in some runs: 3 of the 11 pod runs timed too few to "
                          "report it, so the pod median is of the other 8 (parser said: \"FEW_OBSERVATIONS: sockperf "
                          "timed 14 messages"), why
    assert "FEW_OBSERVATIONS" not in cells["rtt_p50_us"]["flags"]  # every run has its median
    assert "FEW_OBSERVATIONS" in table and "3 of the 11 pod runs timed too few" in table, table
    assert "3 of the 11 pod runs timed too few to report it" in (tmp_path / "r.html").read_text()


def test_a_side_of_one_run_is_one_run(store):
    """'host has 1 runs with it' (review hR #9): the side's count now takes its plural (wording.plural)."""
    cells = {c["metric"]: c for c in
             TestClient(create_app(store)).get("/api/campaigns/one/comparisons").json()["cells"]}
    why = cells["rtt_p99_us"]["flag_details"]["INSUFFICIENT"]
    assert "; host has 1 run with it and pod 0. More runs like these" in why, why
