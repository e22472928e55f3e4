"""hdparm in a pod: an explicit opt-in (pod.privileged_devices) builds a Job with exactly that device,
refused unless the namespace's Pod Security level allows privileged pods; the emulator admits such
a pod only when started with allow_privileged, as a real cluster's admission would refuse it."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import nats
import pytest
from kubernetes import client
from podtax import campaign, config, events, subjects
from podtax.bus import Bus
from podtax.campaign import PodSpec
from podtax_runner.kube import FOLLOW_WATCH_S, KubeExecutor, job_manifest

from tests.integration.harness import event_data

NODE = "node-a"
CLUSTER = {"nodes": [{"name": NODE, "cpu": "4", "memory": "8Gi"}]}


def run(test: str, run_id: str, **params: object) -> events.RunSpec:
    return events.RunSpec(run_id=run_id, campaign="dev", node=NODE, env="kubernetes", test=test,
                          params=params, timeout_s=60)


HDPARM = run("hdparm", "r-hd", mode="disk", device="/dev/sda")
SYSBENCH = run("sysbench-cpu", "r-cpu", threads=1, max_prime=2000, events=100, time=5)
OPTED_IN = PodSpec(privileged_devices=["/dev/sda"])


@pytest.mark.parametrize(("spec", "pod", "privileged", "devices"), [
    (HDPARM, OPTED_IN, True, ["/dev/sda"]),
    (SYSBENCH, OPTED_IN, False, []),                                   # same campaign, no device: no privileges
    (run("hdparm", "r-hd2", mode="disk", device="/dev/sdb"), OPTED_IN, False, []),  # only the listed device
    (HDPARM, PodSpec(), False, []),
])
def test_job_has_exactly_the_opted_in_device(spec: events.RunSpec, pod: PodSpec, privileged: bool,
                                              devices: list[str]) -> None:
    manifest = job_manifest(spec, pod, "podtax-runs")
    pod_spec = manifest["spec"]["template"]["spec"]
    container = pod_spec["containers"][0]
    security = container.get("securityContext") or {}
    assert bool(security.get("privileged")) is privileged
    host_paths = [v["hostPath"] for v in pod_spec["volumes"] if "hostPath" in v]
    assert [h["path"] for h in host_paths] == devices
    assert all(h["type"] == "BlockDevice" for h in host_paths)
    mounted = [m["mountPath"] for m in container["volumeMounts"] if m["name"] == "device"]
    assert mounted == devices
    if privileged:
        assert security["runAsUser"] == 0 and "SYS_RAWIO" in security["capabilities"]["add"]


def test_campaign_refuses_a_pod_device_run_without_the_opt_in() -> None:
    doc = ("name: d\nnodes: [n]\nenvironments: [host, kubernetes]\ntests:\n  - test: sysbench-cpu\n"
           "  - test: hdparm\n    params: {device: /dev/nvme0n1}\n")
    with pytest.raises(campaign.CampaignError) as info:
        campaign.parse(doc)
    assert "d.yaml" not in str(info.value)
    assert "campaign.yaml:6: tests.1: hdparm reads /dev/nvme0n1 in a pod: add it to pod.privileged_devices" \
        in str(info.value)
    opted = campaign.parse(doc + "pod: {privileged_devices: [/dev/nvme0n1]}\n")
    assert opted.pod.privileged_devices == ["/dev/nvme0n1"]
    host_only = campaign.parse(doc.replace("[host, kubernetes]", "[host]"))
    assert host_only.pod.privileged_devices == []
    with pytest.raises(campaign.CampaignError, match="privileged_devices"):
        campaign.parse(doc + "pod: {privileged_devices: ['/dev/sda; rm -rf /']}\n")


async def _failures(nats_url: str) -> tuple[nats.aio.client.Client, asyncio.Queue]:
    nc = await nats.connect(nats_url)
    return nc, await event_data(nc, f"{subjects.RUN_FAILED}.>")


async def _until(predicate, timeout: float = 20.0):  # polls without blocking the executor's event loop
    for _ in range(int(timeout / 0.1)):
        if found := predicate():
            return found
        await asyncio.sleep(0.1)
    raise AssertionError("condition not met")


@pytest.mark.parametrize("allow_privileged", [False, True])
async def test_executor_checks_the_namespace_and_the_cluster_admits_only_when_allowed(
        nats_url: str, tmp_path: Path, kubesim_factory, allow_privileged: bool) -> None:
    sim = kubesim_factory(CLUSTER, allow_privileged=allow_privileged)
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    nc, failures = await _failures(nats_url)
    settings = config.load(config.RunnerSettings, nats_url=nats_url, runner_kubeconfig=sim.kubeconfig,
                           runner_namespace="bench-runs")
    executor = KubeExecutor.create(settings, bus)
    try:
        executor.launch(HDPARM, OPTED_IN)  # the namespace does not allow privileged pods
        failed = await asyncio.wait_for(failures.get(), 30)
        assert failed["reason"] == "privileged-not-allowed"
        assert "pod-security.kubernetes.io/enforce=privileged" in failed["detail"]
        assert not sim.objects("jobs", "bench-runs", group="batch")

        core = client.CoreV1Api(sim.api_client())
        core.patch_namespace("bench-runs", {"metadata": {"labels": {
            "pod-security.kubernetes.io/enforce": "privileged"}}})
        executor.launch(HDPARM.model_copy(update={"run_id": "r-hd-2"}), OPTED_IN)
        if allow_privileged:  # admitted: the Job's pod has exactly the device
            job = (await _until(lambda: sim.objects("jobs", "bench-runs", group="batch")))[0]
            tpl = job["spec"]["template"]["spec"]
            assert tpl["containers"][0]["securityContext"]["privileged"] is True
            assert [v["hostPath"]["path"] for v in tpl["volumes"] if "hostPath" in v] == ["/dev/sda"]
        else:  # the Job is accepted but the emulator's admission refuses its privileged pod, as a
            # restricted cluster does (the Job then fails at its activeDeadlineSeconds)
            job = (await _until(lambda: sim.objects("jobs", "bench-runs", group="batch")))[0]
            await asyncio.sleep(2)
            assert sim.objects("pods", "bench-runs") == []
            # closing the executor ends the threads that follow such a Job (asyncio.run waits for them at
            # exit: a stopping runner used to hang for the run's timeout + 60 s)
            follower = threading.Thread(target=executor._follow, args=("bench-runs", job["metadata"]["name"], 600))
            follower.start()
            await asyncio.sleep(0.5)
            await executor.close()
            await asyncio.to_thread(follower.join, FOLLOW_WATCH_S + 10)
            assert not follower.is_alive()
    finally:
        await executor.close()  # its _follow thread watches a Job that never ends; close() stops it
        await nc.close()
        await bus.close()
