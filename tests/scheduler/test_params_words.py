"""A pod's podtax.io/params written as the template reads them but not as the analyzer stores them (audit
hE, scheduler): `reverse=True` (stored `reverse=true`), `bs=4K` (stored `bs=4k`) matched no group, so the
pod was placed by resources alone with a BenchmarkParamsUnmatched Warning that listed the very parameters
it named. Now the match compares values as the parsers compare a log's echo with its request (booleans
by their words, numbers by value, sizes in bytes). The scheduler against the Kubernetes emulator and a
real nats-server."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scheduler.conftest import events_for, put_scores
from tests.scheduler.sched_objects import pod, score
from tests.scheduler.test_e2e import bound_node, nodes

IPERF = {"test": "iperf3", "metric": "throughput_mbps"}
FIO = {"test": "fio", "metric": "read_iops"}


@pytest.mark.parametrize(("kw", "annotation", "group"), [
    (IPERF, "reverse=True", "protocol=tcp reverse=true"),
    (IPERF, "reverse=yes protocol=tcp", "protocol=tcp reverse=true"),
    (FIO, "rw=randread bs=4K", "bs=4k rw=randread"),
    (FIO, "bs=4096", "bs=4k rw=randread"),
])
def test_params_match_by_value(kw: dict[str, str], annotation: str, group: str, sim_factory: Any,
                               scheduler_factory: Any, nats_url: str) -> None:
    other = group.replace("reverse=true", "reverse=false").replace("bs=4k", "bs=64k")
    sim = sim_factory(nodes({"name": "a"}, {"name": "b"}))
    put_scores(nats_url, [score("a", 900, 12, params_key=group, **kw), score("b", 100, 12, params_key=group, **kw),
                          score("a", 100, 12, params_key=other, **kw), score("b", 900, 12, params_key=other, **kw)])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p", test=kw["test"], annotations={"podtax.io/params": annotation}))
    assert bound_node(sim, "p") == "a"
    ev = sim.wait_for(lambda: [e for e in events_for(sim, "p") if e["reason"] == "Scheduled"])
    assert f"ranked by {kw['test']} {kw['metric']} [{group}]" in ev[0]["message"], ev[0]["message"]
    assert not [e for e in events_for(sim, "p") if e["type"] == "Warning"]
