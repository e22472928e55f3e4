"""A pod whose benchmark has no results here (audit hE, scheduler): a pod labelled `test: fio` with only
sysbench-cpu and iperf3 scores stored, or with a misspelt test (`sysbench_cpu`), got "Successfully assigned
default/p to a" and nothing else: nothing said the benchmark ranking did not apply, nor why. Now the
Scheduled Event says it and a Warning Event (BenchmarkUnmeasured) names the tests that have results, or
that the label names no podtax test. The scheduler against the Kubernetes emulator and a real nats-server."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scheduler.conftest import events_for, put_scores
from tests.scheduler.sched_objects import pod, score
from tests.scheduler.test_e2e import bound_node, nodes

CASES = {  # pod's test label: (the Scheduled message's end, the Warning's start)
    "fio": ("; no benchmark results of fio in this cluster's kubernetes scores (results of: iperf3, sysbench-cpu); "
            "placed by resources alone", "no benchmark results of fio"),
    "sysbench_cpu": ("; 'sysbench_cpu' is not a podtax test (the pod's label test or podtax.io/benchmark; tests: ",
                     "'sysbench_cpu' is not a podtax test"),
    "sysbench-cpu": ("; ranked by sysbench-cpu events_per_second [threads=1] (median per run, 2 node(s) with "
                     "evidence)", None),
}


@pytest.mark.parametrize("test", sorted(CASES))
def test_a_pod_whose_benchmark_has_no_results_is_told(test: str, sim_factory: Any, scheduler_factory: Any,
                                                       nats_url: str) -> None:
    sim = sim_factory(nodes({"name": "a"}, {"name": "b"}))
    put_scores(nats_url, [score("a", 100, 12), score("b", 200, 12),
                          score("a", 900, 12, test="iperf3", metric="throughput_mbps", params_key="protocol=tcp")])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p", test=test))
    bound_node(sim, "p")
    scheduled, warning = CASES[test]
    want = {"Scheduled"} | ({"BenchmarkUnmeasured"} if warning else set())
    ev = sim.wait_for(lambda: (lambda e: e if {x["reason"] for x in e} >= want else None)(events_for(sim, "p")))
    message = next(e["message"] for e in ev if e["reason"] == "Scheduled")
    assert scheduled in message, message
    warnings = [e for e in ev if e["type"] == "Warning"]
    if warning is None:
        assert warnings == [], warnings
    else:
        assert warnings[0]["reason"] == "BenchmarkUnmeasured" and warnings[0]["message"].startswith(warning)
        assert warnings[0]["message"].endswith("placed by resources alone"), warnings[0]["message"]
