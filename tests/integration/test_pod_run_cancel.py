"""`podtax campaign cancel` while a pod run's Job runs (real nats-server, the real runner and KubeExecutor, the real
kubernetes client against kubesim whose simulated container runs 60 s). Before, the Job ran on to its end or
timeout and its log was stored as a result of the cancelled campaign. Now the runner deletes the Job (and, through
it, its pod) and reports a failure with reason `cancelled`, counted cancelled; a runner stopped before that deletes
it once restarted (it re-attaches to the Job, then sees the campaign cancelled)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
from podtax import events, subjects
from podtax.bus import Bus
from podtax_kubesim.testing import start as start_kubesim
from podtax_runner.kube import job_name
from podtax_runner.service import Runner

from tests.integration.harness import wait_for
from tests.integration.test_runner_resume import new_runner

NODE = "n1"
SPEC = {"name": "podcancel", "nodes": [NODE], "environments": ["kubernetes"],
        "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 2000, "events": 100, "threads": 1}}],
        "repetitions": {"min": 1, "max": 1}, "timeout": 120, "seed": 1,
        "pod": {"image": "ghcr.io/podtax/bench:0.1.0"}}
CANCEL = events.campaign_cancelled(events.CampaignCancelled(campaign="podcancel"))


def ours(sim: Any, plural: str, name: str) -> list[str]:
    """The run's Job (`name`), or its pods (labelled job-name=<name>)."""
    if plural == "jobs":
        return [j["metadata"]["name"] for j in sim.objects("jobs", group="batch") if j["metadata"]["name"] == name]
    return [p["metadata"]["name"] for p in sim.objects("pods")
            if (p["metadata"].get("labels") or {}).get("job-name") == name]


@contextlib.asynccontextmanager
async def started(nats_url: str, tmp_path: Path) -> AsyncIterator[tuple[Any, Bus, dict[str, list[Any]], Runner, Any]]:
    """kubesim, the bus, a core subscription's record of logs and failures, a runner with the run's pod running;
    all closed at the end."""
    sim = start_kubesim({"nodes": [{"name": NODE, "capacity": {"cpu": "2", "memory": "4Gi"}}]},
                        kubelet="simulated", workdir=tmp_path / "kubesim", sim_duration=60.0)
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(sim.stop)
        bus = await Bus.connect(nats_url, "test/runner")
        stack.push_async_callback(bus.close)
        nc = await nats.connect(nats_url)
        stack.push_async_callback(nc.close)
        yield sim, bus, *await submitted(nc, bus, sim)


async def submitted(nc: Any, bus: Bus, sim: Any) -> tuple[dict[str, list[Any]], Runner, Any]:
    """The logs and failures seen on the bus, a runner, and its pod run once its pod exists."""
    seen: dict[str, list[Any]] = {"logs": [], "failed": []}

    async def on_log(msg: Any) -> None:
        seen["logs"].append(json.loads(msg.data)["data"]["run"]["run_id"])

    async def on_failed(msg: Any) -> None:
        seen["failed"].append(events.decode(msg.data))

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
    await nc.subscribe(f"{subjects.RUN_FAILED}.>", cb=on_failed)
    await bus.ensure_streams()
    runner = await new_runner(bus, sim)
    await runner.on_campaign(events.campaign_submitted(events.CampaignSubmitted(campaign="podcancel", spec=SPEC)))
    await runner.tick()
    [run] = [s.run for s in runner.campaigns["podcancel"].runs.values() if s.status == "dispatched"]
    await wait_for(lambda: ours(sim, "pods", job_name(run.run_id)), 20, "the run's pod")
    return seen, runner, run


async def test_cancel_deletes_a_running_pod_runs_job_and_records_it_cancelled(nats_url: str, tmp_path: Path) -> None:
    async with started(nats_url, tmp_path) as (sim, bus, seen, runner, run):
        name = job_name(run.run_id)
        await runner.on_cancel(CANCEL)
        await wait_for(lambda: seen["failed"], 20, "the cancelled run's failure")
        [failed] = seen["failed"]
        assert failed.data.reason == "cancelled" and failed.data.run.run_id == run.run_id, failed.data
        assert failed.data.detail == (f"campaign podcancel was cancelled while this run was in flight: its Job "
                                      f"podtax-runs/{name} and its pod were deleted before it finished")
        await wait_for(lambda: not ours(sim, "jobs", name) and not ours(sim, "pods", name), 20, "Job and pod gone")
        await runner.on_outcomes([failed])  # the failure comes back through the parser and analyzer
        state = runner.campaigns.get("podcancel")
        assert state is None and "podcancel" in runner.finished, "the campaign finished"
        doc = await Bus.kv_json(await bus.kv(subjects.RUNNER_BUCKET), f"run.podcancel.{run.run_id}")
        assert doc["status"] == "cancelled" and doc["reason"] == "cancelled", doc  # counted cancelled, not failed
        assert seen["logs"] == [], "no log: not a result"
        assert runner.executor is not None
        await runner.executor.close()


async def test_a_runner_stopped_before_it_deleted_the_job_deletes_it_once_restarted(nats_url: str,
                                                                                  tmp_path: Path) -> None:
    async with started(nats_url, tmp_path) as (sim, bus, seen, first, run):
        name = job_name(run.run_id)
        async with first.lock:  # the cancellation is recorded, then the runner stops before its executor hears of it
            state = first.campaigns["podcancel"]
            state.cancel(events.now())
            await first.save(state)
        assert first.executor is not None
        await first.executor.close()  # a runner stopping leaves a running Job for the next one
        assert ours(sim, "jobs", name) and seen["failed"] == []
        second = await new_runner(bus, sim)  # re-attaches to the Job, sees the campaign cancelled
        await wait_for(lambda: seen["failed"], 20, "the cancelled run's failure")
        assert [(f.data.run.run_id, f.data.reason) for f in seen["failed"]] == [(run.run_id, "cancelled")]
        await wait_for(lambda: not ours(sim, "jobs", name) and not ours(sim, "pods", name), 20, "Job and pod gone")
        await second.on_outcomes(seen["failed"])
        assert "podcancel" in second.finished and seen["logs"] == []
        assert second.executor is not None
        await second.executor.close()
