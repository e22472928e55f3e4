"""A pod run whose Job create the Kubernetes API answers with an error (kubesim's fault failCreates): a 500 that
passes is retried and the run goes on; a 500 that stays, or a 409 with no Job of that name to follow, fails the run
once with the API's answer (reason kubernetes-api), never an executor traceback; nothing is created."""

from __future__ import annotations

import asyncio
import json

import nats
import pytest
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax.campaign import PodSpec
from podtax_kubesim import faults
from podtax_runner.kube import KubeExecutor

NODE = "node-a"
NS = "podtax-runs"
RUN = events.RunSpec(run_id="errs-0123456789abcdef", campaign="errs", node=NODE, env="kubernetes",
                     test="sysbench-cpu", params={"threads": 1, "max_prime": 2000, "events": 100, "time": 5},
                     timeout_s=60)


async def outcome(nats_url: str, kubesim_factory, fault: dict) -> tuple[str, dict, list]:
    """Launch RUN against a cluster with `fault`: the first outcome's family (log or failed), its data, the Jobs."""
    sim = kubesim_factory({"nodes": [{"name": NODE, "cpu": "4", "memory": "8Gi"}], "faults": {"failCreates": [fault]}})
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    nc = await nats.connect(nats_url)
    got: asyncio.Queue = asyncio.Queue()

    async def on(msg: nats.aio.msg.Msg) -> None:
        await got.put((msg.subject.split(".")[2], json.loads(msg.data)["data"]))

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on)
    await nc.subscribe(f"{subjects.RUN_FAILED}.>", cb=on)
    executor = KubeExecutor.create(config.load(config.RunnerSettings, nats_url=nats_url,
                                               runner_kubeconfig=sim.kubeconfig, runner_namespace=NS), bus)
    try:
        executor.launch(RUN, PodSpec())
        family, data = await asyncio.wait_for(got.get(), 90)
        await asyncio.sleep(0.5)
        assert got.empty()  # one outcome
        return family, data, sim.objects("jobs", NS, group="batch")
    finally:
        await executor.close()
        await nc.close()
        await bus.close()


async def test_a_500_that_passes_is_retried(nats_url: str, kubesim_factory) -> None:
    family, _, _ = await outcome(nats_url, kubesim_factory, {"match": "jobs/", "status": 500, "times": 2})
    assert family == "log"


@pytest.mark.parametrize(("status", "head"), [(500, "500 Internal Server Error: "), (409, "409 Conflict: ")])
async def test_an_error_that_stays_fails_the_run_with_the_apis_answer(nats_url: str, kubesim_factory, status: int,
                                                                      head: str) -> None:
    family, failed, jobs = await outcome(nats_url, kubesim_factory, {"match": "jobs/", "status": status})
    assert family == "failed" and failed["reason"] == "kubernetes-api", failed
    assert failed["detail"].startswith(head) and "podtax kubesim fault failCreates" in failed["detail"], failed
    assert jobs == []


@pytest.mark.parametrize("entry", [{"match": "jobs/", "status": 200}, {"match": "jobs/"}, {"match": 3, "status": 500},
                                   {"match": "jobs/", "status": 500, "times": -1}, {"match": "", "status": 500, "x": 1},
                                   {"match": "jobs/", "status": 500, "times": True}])
def test_a_malformed_fail_creates_entry_is_refused(entry: dict) -> None:
    with pytest.raises(ValueError, match="faults.failCreates: a list of"):
        faults.parse({"faults": {"failCreates": [entry]}}, extra=(faults.FAIL,))
