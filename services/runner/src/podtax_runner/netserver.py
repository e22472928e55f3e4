"""The server side of a network run's pod side (iperf3, sockperf), started and stopped by the runner.

The campaign declares the pod side's path as the template parameter `topology` (the host side is
always host->host: the host agent's argv starts its own loopback server, podtax.netpair):

- `pod->pod`: a server pod on the run's node; the client Job connects to its pod IP.
- `pod->pod-across-nodes`: a server pod on another Ready node (the first by name).
- `pod->host`: a hostNetwork server pod on the run's node (the host's network; a real cluster's
  PodSecurity must allow it, kubesim needs --allow-privileged); the client connects to its IP.

The server pod runs the same image as the benchmark, with argv from the validated parameters (no
shell), and is deleted when the run ends, whatever happened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podtax import events, netbench, templates

READY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Server:
    pod: str
    address: str


def needs_server(run: events.RunSpec) -> bool:
    return run.test in netbench.NET_TESTS and run.env == "kubernetes"


def pointed(run: events.RunSpec, address: str) -> events.RunSpec:
    """The run with the client aimed at the server (the Job's argv only; the cell's params stay)."""
    return run.model_copy(update={"params": {**run.params, "server": address}})


def server_node(core: Any, run: events.RunSpec, topology: str) -> str:
    if topology != "pod->pod-across-nodes":
        return run.node
    ready = sorted(n.metadata.name for n in core.list_node().items if n.metadata.name != run.node and any(
        c.type == "Ready" and c.status == "True" for c in (n.status.conditions or [])) and not n.spec.unschedulable)
    if not ready:
        raise netbench.NetbenchError(f"pod->pod-across-nodes needs a second Ready node besides {run.node}")
    return ready[0]


def start(core: Any, namespace: str, image: str, run: events.RunSpec) -> Server:
    """Create the server pod of `run`'s topology and wait until it listens (deleted again on failure)."""
    params = templates.get(run.test).validate(run.params)
    topology = str(getattr(params, "topology", "pod->pod"))
    pods = netbench.Pods(core, namespace, image)
    host = topology == "pod->host"
    name = pods.create(server_node(core, run, topology), netbench.server_argv(run.test, params, "0.0.0.0"),
                       "server", host_network=host)
    try:
        pod = pods.wait_ready(name, netbench.READY[run.test], READY_TIMEOUT_S)
    except BaseException:
        pods.delete(name)
        raise
    return Server(name, pod.status.pod_ip)


def stop(core: Any, namespace: str, server: Server) -> None:
    netbench.Pods(core, namespace).delete(server.pod)
