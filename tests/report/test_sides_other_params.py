"""Host and pod that ran different params (audit: a manifest with bs=4k on its host rows and bs=64k on its pod
rows): the import and its dry run said nothing, and the report showed two one-sided cells whose advice was
"6 more pod runs are needed" and "6 more host runs", which would never give a ratio. The import now warns,
naming the params, and the report says the sides ran different params (bs=4k vs bs=64k) instead of asking
for runs. Real events in a real DuckDB file, the real analyzer app, and the real CLI entry point."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.report.conftest import serve

T0 = datetime(2025, 3, 3, 8, tzinfo=UTC)
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64"
FIO = {"rw": "randread", "size": "64M"}


def _runs(campaign: str, env: str, params: dict, n: int, day: int, slot: int) -> list[events.Envelope]:
    out = []
    for i in range(n):
        run = events.RunSpec(run_id=f"{campaign}-{env}-{slot}-{i}", campaign=campaign, node="node-1", env=env,
                             test="fio", params=params, cluster="local", attempt=1, timeout_s=600)
        start = T0 + timedelta(days=day, minutes=12 * i + 3 * slot)  # never overlapping
        value = 80_000.0 * (1 + 0.002 * np.sin(i + slot))
        res = events.Result(run=run, tool="fio", tool_version="fio-3.33", parser_version="1",
                            metrics=[events.Metric(name="read_iops", value=value, unit="IOPS", higher_is_better=True)],
                            started_at=start, ended_at=start + timedelta(seconds=10))
        out.append(events.result(res, "test"))
    return out


# campaign: ((env, bs) of each side's runs, {bs: the start of INSUFFICIENT's text for that cell})
CASES = {
    "apart": ((("host", "4k"), ("kubernetes", "64k")),
              {"4k": "Host and pod ran different params: host ran bs=4k and pod ran bs=64k, so each side's runs",
               "64k": "Host and pod ran different params: host ran bs=4k and pod ran bs=64k, so each side's runs"}),
    # the pod ran 64k only, the host both: the 4k cell lacks pod runs of params the pod can run
    "pod-short": ((("host", "4k"), ("host", "64k"), ("kubernetes", "64k")),
                  {"4k": "Too few runs: host has 8 and pod 0; at least 6 a side are needed, so 6 more pod runs"}),
    "host-only": ((("host", "4k"),),
                  {"4k": "Too few runs: host has 8 and pod 0; at least 6 a side are needed, so 6 more pod runs"}),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("apart") / "podtax.duckdb")
    for day, (name, (ran, _)) in enumerate(CASES.items()):
        for slot, (env, bs) in enumerate(ran):
            s.write_batch(_runs(name, env, {**FIO, "bs": bs}, 8, day, slot))
    yield s
    s.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_report_says_the_sides_ran_different_params(store, name):
    _, expected = CASES[name]
    cells = TestClient(create_app(store)).get(f"/api/campaigns/{name}/comparisons").json()["cells"]
    by_bs = {c["params"].split()[0].removeprefix("bs="): c for c in cells}
    for bs, start in expected.items():
        c = by_bs[bs]
        assert c["verdict"] == "not comparable" and c["ratio"] is None
        assert c["flag_details"]["INSUFFICIENT"].startswith(start), c["flag_details"]["INSUFFICIENT"]
        if name == "apart":
            assert c["sentence"].startswith("Not comparable: host and pod ran different params: host ran bs=4k "
                                            "and pod ran bs=64k"), c["sentence"]
            assert "more runs will not help" in c["sentence"] and "more pod runs" not in c["sentence"]
        else:
            assert "different params" not in c["sentence"] + c["flag_details"]["INSUFFICIENT"]


def test_the_cli_report_names_the_params(store, capsys):
    with serve(create_app(store)) as url:
        assert main(["report", "apart", "--api", url]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "host ran bs=4k and pod ran bs=64k" in out and "more host runs" not in out and "more pod runs" not in out


HEADER = "file,node,env,test,params,started_at,tool_version\n"
ONE = "threads=1 max_prime=100000 events=200 time=0"
TWO = "threads=2 max_prime=100000 events=400 time=0"
MANIFESTS = {  # id: (params of the kubernetes row, the warning expected or None)
    "different params": (TWO, "warning: sysbench-cpu on node-1: the host rows ran events=200 threads=1 and the "
                              "kubernetes rows events=400 threads=2, so their runs fall into different cells and "
                              "none gets a kubernetes/host ratio; give both sides the same params (the manifest's "
                              "params column)"),
    "same params": (ONE, None),
}


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_the_import_dry_run_warns_of_different_params(name, tmp_path, capsys):
    pod_params, warning = MANIFESTS[name]
    for n in (1, 2):
        shutil.copy(CORPUS / f"sysbench-cpu-prime100000-{n}t.log", tmp_path / f"{n}t.log")
    pod_log = "2t.log" if pod_params == TWO else "1t.log"
    (tmp_path / "m.csv").write_text(HEADER + f"1t.log,node-1,host,sysbench-cpu,{ONE},2024-03-01T10:00:00Z,\n"
                                    f"{pod_log},node-1,kubernetes,sysbench-cpu,{pod_params},2024-03-01T10:05:00Z,\n")
    assert main(["import", str(tmp_path / "m.csv"), "--campaign", "old", "--dry-run"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    if warning is None:
        assert "different cells" not in err, err
    else:
        assert warning in err, err
