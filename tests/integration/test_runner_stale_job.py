"""A Job of a pod run's name already in the cluster (409 on create) was always followed as this run's, for a runner
restart. A campaign submitted again under the same name (a new deployment or data dir, the same cluster, within
the Jobs' TTL) has the same run ids, so the Jobs left by the earlier submission were followed and their old logs
published as the new runs' (audit: a Job made before the submission, with another program's output, was stored as
the pod run). Now the Job records its campaign's submission: another submission's Job is deleted and this run's
created; this submission's (a restarted runner) is still followed. And a pod run whose outcome cannot be published
(a full stream) ends with a warning, not an unretrieved task exception."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import nats
from kubernetes import client
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax.campaign import PodSpec
from podtax_runner.kube import SUBMITTED, KubeExecutor, job_manifest, job_name

from tests.integration.harness import event_data, wait_for

NODE = "node-a"
NS = "podtax-runs"
CLUSTER = {"nodes": [{"name": NODE, "cpu": "4", "memory": "8Gi"}]}
RUN = events.RunSpec(run_id="again-0123456789abcdef", campaign="again", node=NODE, env="kubernetes",
                     test="sysbench-cpu", params={"threads": 1, "max_prime": 2000, "events": 100, "time": 5},
                     timeout_s=60)
EARLIER, NOW = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)


def left_job(submitted: datetime, log_text: str) -> dict:
    """The run's Job as a runner made it for the campaign submitted at `submitted`, its pod printing `log_text`."""
    manifest = job_manifest(RUN, PodSpec(), NS, submitted.isoformat())
    manifest["spec"]["template"]["metadata"]["annotations"]["podtax.io/sim-log"] = log_text
    return manifest


async def published_log(nats_url: str, kubesim_factory, left: dict) -> tuple[str, list[dict]]:
    """Leave `left` in the cluster, launch RUN as submitted at NOW; the stdout published and the Jobs then."""
    sim = kubesim_factory(CLUSTER)
    batch = client.BatchV1Api(sim.api_client())
    client.CoreV1Api(sim.api_client()).create_namespace({"metadata": {"name": NS}})
    batch.create_namespaced_job(NS, left)
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    nc = await nats.connect(nats_url)
    logs = await event_data(nc, f"{subjects.RUN_LOG}.>")
    executor = KubeExecutor.create(config.load(config.RunnerSettings, nats_url=nats_url,
                                               runner_kubeconfig=sim.kubeconfig, runner_namespace=NS), bus)
    try:
        executor.launch(RUN, PodSpec(), NOW)
        raw = await asyncio.wait_for(logs.get(), 60)
        return raw["stdout"], sim.objects("jobs", NS, group="batch")
    finally:
        await executor.close()
        await nc.close()
        await bus.close()


async def test_a_job_left_by_another_submission_is_replaced(nats_url: str, kubesim_factory) -> None:
    stdout, jobs = await published_log(nats_url, kubesim_factory, left_job(EARLIER, "STALE LOG OF AN EARLIER RUN"))
    assert "STALE LOG" not in stdout  # before: the earlier submission's log, published as this run's
    assert all(j["metadata"]["annotations"][SUBMITTED] == NOW.isoformat() for j in jobs), jobs


async def test_this_submissions_job_is_still_followed(nats_url: str, kubesim_factory) -> None:
    stdout, jobs = await published_log(nats_url, kubesim_factory, left_job(NOW, "LOG OF THIS RUN"))
    assert stdout.strip() == "LOG OF THIS RUN"  # a restarted runner re-attaches to its Job
    assert [j["metadata"]["name"] for j in jobs] in ([job_name(RUN.run_id)], [])


async def test_a_pod_run_whose_outcome_cannot_be_published_ends_quietly(nats_url: str, kubesim_factory,
                                                                         caplog) -> None:
    """A full events stream refuses the run's log: it is held and sent again (the run does not expire meanwhile: given
    up while nats-py held a copy, the run ran twice, tests/integration/test_pod_run_publish_nats_down.py), said in an
    error naming the limit; the runner stopping gives it up in an error, and the task ends without 'Task exception
    was never retrieved'."""
    sim = kubesim_factory(CLUSTER)
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams(max_bytes=1_000)  # no room for a run's log
    executor = KubeExecutor.create(config.load(config.RunnerSettings, nats_url=nats_url,
                                               runner_kubeconfig=sim.kubeconfig, runner_namespace=NS), bus)

    def said(level: str) -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "podtax.runner.kube" and r.levelname == level]

    try:
        executor.launch(RUN, PodSpec(), NOW)
        task = executor.tasks[RUN.run_id]
        await wait_for(lambda: said("ERROR"), 60, "the runner's error of its publish")
        assert executor.holding()[RUN.run_id].startswith("NATS refuses its log: JetStream refused the events: its "
                                                         "stream is full"), executor.holding()
        assert said("ERROR")[0].startswith(f"pod run {RUN.run_id}: NATS refuses its log: JetStream refused the "
                                           "events: its stream is full"), said("ERROR")
    finally:
        await executor.close()
        await bus.close()
    assert task.done() and (task.cancelled() or task.exception() is None), task
    assert any(m.startswith(f"pod run {RUN.run_id}: its log was not published") for m in said("ERROR")), caplog.text
    assert not executor.holding()
