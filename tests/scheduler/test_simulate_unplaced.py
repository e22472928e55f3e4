"""`podtax simulate` and pods that can never be placed, and workloads Kubernetes would refuse.

A class whose required pod affinity waits on pods that finished (or never run) left those pods pending when the events
ran out, and run_once crashed on them (KeyError: a traceback); a nodeAffinity on a label the simulated nodes lack or an
unknown operator made every pod of the class unplaceable alike. Now what Kubernetes' validation would refuse
(misspelled keys, no topologyKey, an unknown operator, a label or namespace that is not one, a class label `test`, which
the class's test sets) and a nodeAffinity no simulated node meets are refused at load (exit 2, one line naming the
fix), and pods never placed are counted per policy: the figures exclude them and the output says so. A pod waiting
on one placed later in the same pass is placed in that pass (the live scheduler requeues on a pod's add)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from podtax_scheduler import simulate
from podtax_scheduler.simulate import Job, JobClass, Workload, pod_object, run_once
from podtax_scheduler.simulate_cli import main

from tests.scheduler.test_simulate import planted
from tests.scheduler.test_simulate_namespaces import _campaign_db

BASE = 'nodes: {cpu: "3", memory: 16Gi}\nduration_s: 600\nclasses:\n'
DB_CLASS = "  - {test: sysbench-cpu, params: threads=1, rate_per_s: 0.01, runtime_s: 30, labels: {app: db}}\n"
NEEDS_DB = ("{podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: db}}, "
            "topologyKey: kubernetes.io/hostname}]}}")
COLOCATE = BASE + DB_CLASS + ("  - {test: sysbench-cpu, params: threads=1, rate_per_s: 0.05, runtime_s: 30, "
                              f"labels: {{app: web}}, affinity: {NEEDS_DB}}}\n")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _campaign_db(tmp_path_factory.mktemp("sim") / "podtax.duckdb")


def _run(tmp_path: Path, db: Path, text: str, *extra: str) -> int:
    (tmp_path / "w.yaml").write_text(text)
    return main(["--campaign", "ns", "--workload", str(tmp_path / "w.yaml"), "--db", str(db), "--policies", "podtax",
                 "--seeds", "2", *extra])


def test_pods_never_placed_are_counted_not_a_traceback(tmp_path: Path, db: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, db, COLOCATE, "--json") == 0
    policies = json.loads(capsys.readouterr().out)["policies"]
    for name in ("podtax", "oracle"):
        r = policies[name]
        assert r["unplaced"][0] > 0 and set(r["unplaced_by_class"]) == {"classes.1"}, r  # web pods, never db pods
        assert r["unplaced_by_class"]["classes.1"] == r["unplaced"][0]
    assert _run(tmp_path, db, COLOCATE) == 0
    out = capsys.readouterr().out
    assert "unplaced" in out and "podtax could not place" in out and "its figures exclude them" in out, out


def test_a_workload_none_of_whose_pods_can_be_placed_is_refused(tmp_path: Path, db: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    text = BASE + ("  - {test: sysbench-cpu, params: threads=1, rate_per_s: 0.01, runtime_s: 60, labels: {app: web}, "
                   f"affinity: {NEEDS_DB}}}\n")
    assert _run(tmp_path, db, text) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "placed none of the" in err and "classes.0" in err, err


def _affinity(text: str) -> str:
    return BASE + f"  - {{test: sysbench-cpu, params: threads=1, rate_per_s: 0.01, runtime_s: 60, affinity: {text}}}\n"


POD_TERM = "{labelSelector: {matchLabels: {app: db}}, topologyKey: kubernetes.io/hostname}"
REFUSED = {
    "unknown operator": (_affinity("{podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: "
                                   "{matchExpressions: [{key: app, operator: Bogus, values: [db]}]}, "
                                   "topologyKey: kubernetes.io/hostname}]}}"), "'Bogus' is not one; use In"),
    "node label no node has": (_affinity("{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                                         "{nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, "
                                         "values: [a]}]}]}}}"), "no simulated node matches it"),
    "misspelled key": (_affinity(f"{{podAntiAfinity: {{requiredDuringSchedulingIgnoredDuringExecution: "
                                 f"[{POD_TERM}]}}}}"), "podAntiAfinity: unknown key; use"),
    "no topologyKey": (_affinity("{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                                 "[{labelSelector: {matchLabels: {app: db}}}]}}"), "topologyKey: required"),
    "a term not in a list": (_affinity(f"{{podAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: "
                                       f"{POD_TERM}}}}}"), "IgnoredDuringExecution: give a list"),
    "label value with a space": (BASE + "  - {test: sysbench-cpu, params: threads=1, rate_per_s: 0.01, runtime_s: 60, "
                                        "labels: {app: has space}}\n", "label value 'has space'"),
    "namespace name": (BASE.replace("classes:", "namespaces: {Bad_NS: {team: a}}\nclasses:") + DB_CLASS,
                       "namespace 'Bad_NS' is not a lowercase RFC 1123 label"),
    "class label test": (BASE + "  - {test: sysbench-cpu, params: threads=1, rate_per_s: 0.01, runtime_s: 60, "
                                "labels: {test: other}}\n", "labels.test: the pods' test label is the class's test"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_kubernetes_would_refuse_is_refused_at_load(case: str, tmp_path: Path, db: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    text, words = REFUSED[case]
    assert _run(tmp_path, db, text) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err


def test_a_pod_waiting_on_one_placed_later_in_the_same_pass_is_placed_then(monkeypatch: pytest.MonkeyPatch) -> None:
    """One node of 3 cpus: a filler pod takes all 3 at t=0; a web pod needing a db pod beside it arrives at t=1, a
    db pod at t=2 (no cpu left). When the filler ends both wait: web first (no db pod yet), then db is placed. Web
    must be placed in that pass: waiting for the next event (db's end) it would never be."""
    m = planted({"n1": 1000.0})
    req = {"cpu": "1", "memory": "1Gi"}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    classes = [JobClass("filler", m, 1.0, 100.0, {"cpu": "3", "memory": "1Gi"}),
               JobClass("web", m, 1.0, 30.0, req, labels={"app": "web"}, affinity=affinity),
               JobClass("db", m, 1.0, 30.0, req, labels={"app": "db"})]
    w = Workload(["n1"], {"n1": "n1"}, {"cpu": "3", "memory": "16Gi"}, 10.0, 0.0, classes)

    def arrivals(w: Workload, seed: int) -> list[Job]:
        jobs = [Job(i, i, float(i), 0.5) for i in range(3)]
        for j in jobs:
            j.pod = pod_object(j, w.classes[j.cls])
            j.info = simulate.PodInfo.from_dict(j.pod)
        return jobs

    monkeypatch.setattr(simulate, "arrivals", arrivals)
    r: dict[str, Any] = run_once(w, "podtax", 0)
    assert r["unplaced"] == 0 and r["jobs"] == 3, r
    assert np.isclose(r["makespan_s"], 100.0 + 30.0, rtol=0.05), r  # web and db both start when the filler ends
