"""A restarted runner never runs a pod run twice (real nats-server, real kubernetes client against the
emulator, real KubeExecutor):

- a runner stopped while a pod run's Job is running leaves the Job; the next runner re-attaches to it
  (409 on create) and publishes its log: one Job created, one log;
- a runner stopped after a pod run's log went out, but before the result came back through the parser
  and analyzer, has recorded the run as reported: the next runner waits for the outcome instead of
  creating the Job again (before, it created a second Job: the run executed twice).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import pytest
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax_kubesim.kubelet import Kubelet
from podtax_kubesim.testing import start as start_kubesim
from podtax_runner.kube import KubeExecutor, job_name
from podtax_runner.service import Runner

from tests.integration.harness import wait_for
from tests.kubesim.test_kubesim_metrics import scrape, total

NODE = "n1"
SPEC = {"name": "resume", "nodes": [NODE], "environments": ["kubernetes"],
        "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 2000, "events": 100, "threads": 1}}],
        "repetitions": {"min": 1, "max": 1}, "timeout": 30, "seed": 1,
        "pod": {"image": "ghcr.io/podtax/bench:0.1.0"}}


async def new_runner(bus: Bus, sim: Any) -> Runner:
    """A runner as `serve` builds it after a restart: state loaded from KV, runs in flight resumed."""
    settings = config.load(config.RunnerSettings, nats_url=bus.nc.connected_url.geturl(),
                           runner_kubeconfig=sim.kubeconfig, runner_kubernetes=True)
    runner = Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), KubeExecutor.create(settings, bus))
    await runner.load()
    return runner


def jobs(sim: Any) -> list[str]:
    return [j["metadata"]["name"] for j in sim.objects("jobs", group="batch")]


def jobs_created(sim: Any) -> tuple[float, float]:
    """(Jobs created, creations refused as existing) as the emulator's apiserver_request_total counts them."""
    m = scrape(sim)
    return total(m, "POST", "jobs", "201"), total(m, "POST", "jobs", "409")


def held_finishes(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], None]:
    """Hold the end of every simulated container (Kubelet._sim_finish) until the returned function is called with
    the emulator: it ends the held ones and lets later ones end at their time (both on the emulator's loop)."""
    held: list[tuple[Kubelet, tuple[Any, ...]]] = []
    holding = [True]
    finish = Kubelet._sim_finish

    def maybe(self: Kubelet, *args: Any) -> None:
        if holding[0]:
            held.append((self, args))
        else:
            finish(self, *args)

    def release() -> None:
        holding[0] = False
        for kubelet, args in held:
            finish(kubelet, *args)

    monkeypatch.setattr(Kubelet, "_sim_finish", maybe)
    return lambda sim: sim.call(release)


async def test_a_restarted_runner_reattaches_and_never_runs_a_pod_run_twice(nats_url: str, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # the Job's pod runs until the first runner is stopped: before, it ended 2 s after it started, and a test that
    # stopped the runner later than that (a loaded host) saw the first runner publish its log
    release = held_finishes(monkeypatch)
    sim = start_kubesim({"nodes": [{"name": NODE, "capacity": {"cpu": "2", "memory": "4Gi"}}]},
                        kubelet="simulated", workdir=tmp_path / "kubesim", sim_duration=2.0)
    bus = await Bus.connect(nats_url, "test/runner")
    nc = await nats.connect(nats_url)
    logs: list[str] = []

    async def on_log(msg: Any) -> None:  # core subscription: every publish, de-duplicated ones included
        logs.append(json.loads(msg.data)["data"]["run"]["run_id"])

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
    try:
        await bus.ensure_streams()
        first = await new_runner(bus, sim)
        submitted = events.campaign_submitted(events.CampaignSubmitted(campaign="resume", spec=SPEC))
        await first.on_campaign(submitted)
        await first.tick()
        state = first.campaigns["resume"]
        [running] = [s.run for s in state.runs.values() if s.status == "dispatched"]
        name = job_name(running.run_id)
        await wait_for(lambda: jobs(sim) == [name], 10, "the Job")
        assert first.executor is not None
        await first.executor.close()  # the runner stops while the Job runs
        assert logs == [] and jobs(sim) == [name], "the Job is left for the next runner"
        release(sim)  # it ends now if its 2 s are up, else at their end

        second = await new_runner(bus, sim)  # re-attaches to the Job
        assert second.executor is not None and running.run_id in second.executor.tasks
        await wait_for(lambda: logs == [running.run_id], 20, "the re-attached run's log")
        await wait_for(lambda: second.campaigns["resume"].runs[running.run_id].reported_at is not None, 10,
                       "the run recorded as reported")
        await wait_for(lambda: not second.executor.tasks, 10, "the run's task to end and be dropped")
        assert jobs_created(sim) == (1.0, 1.0), "one Job: the second runner's create met the first's Job"
        doc = await Bus.kv_json(await bus.kv(subjects.RUNNER_BUCKET), f"run.resume.{running.run_id}")
        assert doc["status"] == "dispatched" and doc["reported_at"], "reported, outcome not back yet"
        await second.executor.close()

        third = await new_runner(bus, sim)  # stopped before the result came back: wait, do not run again
        assert third.executor is not None and third.executor.tasks == {}
        await asyncio.sleep(1.0)
        assert jobs_created(sim) == (1.0, 1.0) and logs == [running.run_id], "never executed twice"
        # the outcome arrives (the simulated container printed nothing, so the parser rejects its log)
        failed = events.run_failed(events.RunFailed(run=running, stage="parser", reason="no-output",
                                                    detail="empty log"), "test")
        resumed = third.campaigns["resume"]
        await third.on_outcomes([failed])
        assert resumed.runs[running.run_id].status == "failed" and resumed.finished_at is not None
        assert "resume" not in third.campaigns and "resume" in third.finished, "saved finished: out of memory"
        fourth = await new_runner(bus, sim)  # a finished campaign is known by name, its runs are not read
        assert fourth.campaigns == {} and fourth.finished == {"resume"}
        await fourth.on_cancel(events.campaign_cancelled(events.CampaignCancelled(campaign="resume")))
        await fourth.on_campaign(submitted)  # a redelivered submission is not planned again
        assert fourth.campaigns == {}
        assert fourth.executor is not None
        await fourth.executor.close()
        await third.executor.close()
    finally:
        await nc.close()
        await bus.close()
        sim.stop()
