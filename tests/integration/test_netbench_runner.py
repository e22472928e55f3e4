"""Network topologies through the runner's Kubernetes executor (issue 16 item 2): for each pod-side
topology the runner starts the server (a pod, or a hostNetwork pod for pod->host), points the client
Job at it, publishes the raw log, and deletes the server whatever happened; the host side's argv
(podtax.netpair) starts and stops its own loopback server. Real nats-server, real iperf3, the
emulator's exec kubelet with its real pod network."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

import nats
import pytest
from podtax import config, events, netbench, subjects, templates
from podtax.bus import Bus
from podtax.campaign import PodSpec
from podtax.derive import derive
from podtax_kubesim import podnet
from podtax_runner.kube import KubeExecutor

from tests.integration.harness import event_data, wait_for

pytestmark = pytest.mark.skipif(bool(podnet.unavailable()) or not shutil.which("iperf3"),
                                reason="needs root, iproute2 and iperf3")
CLUSTER = {"nodes": [{"name": "n0"}, {"name": "n1"}]}
TOPOLOGIES = ("pod->pod", "pod->pod-across-nodes", "pod->host")


def spec(run_id: str, env: str, topology: str) -> events.RunSpec:
    params = templates.get("iperf3").validate({"duration": 1, "port": 15601, "topology": topology}).model_dump()
    return events.RunSpec(run_id=run_id, campaign="net", node="n0", env=env, test="iperf3",  # type: ignore[arg-type]
                          params=params, timeout_s=60)


def server_pods(sim: Any) -> list[str]:
    """The names of the server pods left in the runs' namespace."""
    return [p["metadata"]["name"] for p in sim.objects("pods", "net-runs") if "server" in p["metadata"]["name"]]


async def test_runner_starts_and_removes_the_server_of_each_topology(nats_url: str, kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim = kubesim_factory(CLUSTER, kubelet="exec", pod_network=True, allow_privileged=True)
    tag = sim.emulator.kubelet.network.tag
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    nc = await nats.connect(nats_url)
    logs = await event_data(nc, f"{subjects.RUN_LOG}.>")
    failures = await event_data(nc, f"{subjects.RUN_FAILED}.>")
    settings = config.load(config.RunnerSettings, nats_url=nats_url, runner_kubeconfig=sim.kubeconfig,
                           runner_namespace="net-runs")
    executor = KubeExecutor.create(settings, bus)
    try:
        for topology in TOPOLOGIES:  # one at a time: runs on a node never overlap
            executor.launch(spec(f"pod-{topology.replace('>', '')}", "kubernetes", topology), PodSpec())
            done = asyncio.ensure_future(logs.get())
            failed = asyncio.ensure_future(failures.get())
            finished, _ = await asyncio.wait({done, failed}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
            assert done in finished, failed.result() if failed.done() else "no log within 60 s"
            failed.cancel()
            raw = events.RawLog.model_validate(done.result())
            assert raw.run.params["server"] == "127.0.0.1"  # the cell's params stay; only the Job was pointed
            outcome = derive(raw)
            assert isinstance(outcome, events.ResultV1), outcome
            assert next(m.value for m in outcome.data.metrics if m.name == "throughput_mbps") > 0
            # the runner publishes the log, then deletes the Job and the server (Kubernetes calls in threads)
            await wait_for(lambda: not server_pods(sim), 30, f"{topology}: the server pod to be removed")
    finally:
        await executor.close()
        await nc.close()
        await bus.close()
    # The host side: the template's argv starts its own loopback server (podtax.netpair) and stops it.
    host = spec("host", "host", "pod->pod")
    out = netbench.run_host(templates.get("iperf3").build_argv(host.params), 60, "127.0.0.1")
    result = derive(events.RawLog(run=host, stdout=out.stdout, exit_code=out.exit_code, started_at=out.started_at,
                                  ended_at=out.ended_at))
    assert isinstance(result, events.ResultV1), result
    sim.wait_for(lambda: not [n for n in podnet.namespaces() if n.startswith(podnet.NETNS_PREFIX + tag)], timeout=10)


def test_pod_side_topologies_are_validated_parameters(tmp_path: Path) -> None:
    with pytest.raises(templates.TemplateError, match="topology"):
        templates.get("iperf3").validate({"topology": "pod->moon"})
    assert templates.get("sockperf").validate({}).topology == "pod->pod"  # type: ignore[attr-defined]
    argv = templates.get("iperf3").build_argv({"server": "198.18.0.9"})
    assert argv[0] == "iperf3"  # a remote server: the client alone
    local = templates.get("iperf3").build_argv({})
    assert local[1:6] == ["-I", "-m", "podtax.netpair", "--test", "iperf3"] and local[local.index("--") + 1] == "iperf3"


async def test_a_refused_server_pod_fails_the_run_and_leaves_nothing(nats_url: str, kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim = kubesim_factory(CLUSTER, kubelet="exec", pod_network=True)  # hostNetwork pods are refused (403)
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    nc = await nats.connect(nats_url)
    failures = await event_data(nc, f"{subjects.RUN_FAILED}.>")
    settings = config.load(config.RunnerSettings, nats_url=nats_url, runner_kubeconfig=sim.kubeconfig,
                           runner_namespace="net-runs")
    executor = KubeExecutor.create(settings, bus)
    try:
        executor.launch(spec("pod-host-refused", "kubernetes", "pod->host"), PodSpec())
        failed = await asyncio.wait_for(failures.get(), 30)
        assert failed["reason"] == "kubernetes-api" and "host namespaces (hostNetwork=true)" in failed["detail"]
        assert sim.objects("pods", "net-runs") == [] and sim.objects("jobs", "net-runs", group="batch") == []
    finally:
        await executor.close()
        await nc.close()
        await bus.close()


async def test_the_host_agent_runs_the_host_side_with_its_own_loopback_server(tmp_path: Path) -> None:
    """The host agent's executor (argv only, PATH-only environment, every process it started killed at the
    end) runs iperf3's host side: podtax.netpair starts the server, the client measures, nothing stays."""
    from podtax_host_agent.execute import run_template

    run = spec("agent-host", "host", "pod->pod")
    out = await run_template(run, 1_000_000, tmp_path, "iperf 3.12 (cJSON 1.7.15)")
    result = derive(events.RawLog(run=run, stdout=out.stdout, stderr=out.stderr, exit_code=out.exit_code,
                                  started_at=out.started_at, ended_at=out.ended_at))
    assert isinstance(result, events.ResultV1), result
    assert next(m.value for m in result.data.metrics if m.name == "throughput_mbps") > 0
    left = subprocess.run(["pgrep", "-f", "iperf3 -s -1 -B 127.0.0.1 -p 15601"], capture_output=True, text=True)
    assert left.stdout == "", "the loopback server outlived the run"
