"""Network benchmarks (iperf3, sockperf) along a topology: the server side is started, the client
runs, and the server is always torn down, on either side of the comparison.

Topologies (the path of the pod side; the host side is always host networking, `host->host`):

| topology | server | client |
|---|---|---|
| `host->host` | host process on loopback | host process |
| `pod->host` | host process on the host's own address | pod on the node |
| `pod->pod` | pod on the same node | pod on the node |
| `pod->pod-across-nodes` | pod on the other node | pod on the node |

Host processes run here (this module runs on the node, like the host agent); pods are created
through the Kubernetes API (the real `kubernetes` client; the kubesim emulator with
`pod_network=True` gives them real network namespaces, veth pairs and bridges). Only registered
templates with validated parameters are run, never a shell; the server's argv comes from the same
validated parameters (port, protocol) and the topology's bind address.
"""

from __future__ import annotations

import contextlib
import random
import select
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from podtax import events, templates
from podtax.derive import derive

Topology = Literal["host->host", "pod->host", "pod->pod", "pod->pod-across-nodes"]
TOPOLOGIES: tuple[str, ...] = ("host->host", "pod->host", "pod->pod", "pod->pod-across-nodes")
NET_TESTS = ("iperf3", "sockperf")
# The label that sets a network test's pods apart (`client` or `server`): deploy/k8s's NetworkPolicies let
# clients reach servers, and no other benchmark pod anything. The runner's client Jobs carry it too.
ROLE_LABEL = "podtax.io/net-role"
READY = {"iperf3": "Server listening on", "sockperf": "block on socket"}


class NetbenchError(RuntimeError):
    """The server side could not be started (a clear sentence, no traceback)."""


@dataclass(frozen=True)
class Output:
    stdout: str
    exit_code: int | None
    started_at: datetime
    ended_at: datetime
    server: str  # the address the client was pointed at


def server_argv(test: str, params: templates.Params, bind: str) -> list[str]:
    """The server side of a validated network template, bound to `bind`."""
    port = str(params.port)  # type: ignore[attr-defined]
    if test == "iperf3":
        return ["iperf3", "-s", "-1", "-B", bind, "-p", port, "--forceflush"]
    if test == "sockperf":
        tcp = ["--tcp"] if params.protocol == "tcp" else []  # type: ignore[attr-defined]
        return ["sockperf", "server", "-i", bind, "-p", port, *tcp]
    raise templates.TemplateError("not-a-network-test", f"{test} has no server side; use one of {NET_TESTS}")


def host_address() -> str:
    """This host's own address on its default route (what a pod reaches as its node's IP)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("203.0.113.1", 9))  # TEST-NET-3: no packet is sent by a UDP connect
        except OSError as exc:
            raise NetbenchError(f"this host has no default route, so pods cannot reach it: {exc}") from None
        return str(s.getsockname()[0])


def _now() -> datetime:
    return datetime.now(UTC)


# --- host processes ------------------------------------------------------------------------
@contextlib.contextmanager
def host_server(argv: list[str], ready: str, timeout: float = 10.0):  # type: ignore[no-untyped-def]
    """Run a server process until the block ends (always killed), once it printed `ready`."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        seen, deadline = b"", time.monotonic() + timeout
        assert proc.stdout is not None
        while ready.encode() not in seen:
            if proc.poll() is not None or time.monotonic() > deadline:
                seen += proc.stdout.read() if proc.poll() is not None else b""
                text = seen.decode(errors="replace").strip()[-300:]
                raise NetbenchError(f"the {argv[0]} server did not start ({' '.join(argv)}): {text or 'no output'}")
            if select.select([proc.stdout], [], [], 0.1)[0]:
                seen += proc.stdout.read1(4096)  # type: ignore[attr-defined]
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def run_host(argv: list[str], timeout_s: float, server: str) -> Output:
    started = _now()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        out, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        code = None
    return Output(out, code, started, _now(), server)


# --- pods -------------------------------------------------------------------------------------
def _pod(name: str, node: str, argv: list[str], image: str, role: str, host_network: bool = False) -> dict[str, Any]:
    extra = {"hostNetwork": True} if host_network else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "podtax",
                                                  "app.kubernetes.io/name": "podtax-netbench", ROLE_LABEL: role}},
            "spec": {"restartPolicy": "Never", "nodeName": node, "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 0, **extra,
                     "containers": [{"name": "net", "image": image, "command": argv}]}}


@dataclass
class Pods:
    """Creates, follows and deletes the benchmark's pods (a kubernetes.client.CoreV1Api)."""

    core: Any
    namespace: str = "default"
    image: str = "ghcr.io/podtax/bench:0.1.0"
    poll: float = 0.05

    def create(self, node: str, argv: list[str], role: str, host_network: bool = False) -> str:
        name = f"podtax-net-{role}-{uuid.uuid4().hex[:8]}"
        self.core.create_namespaced_pod(self.namespace, _pod(name, node, argv, self.image, role, host_network))
        return name

    def read(self, name: str) -> Any:
        return self.core.read_namespaced_pod(name, self.namespace)

    def log(self, name: str) -> str:
        return self.core.read_namespaced_pod_log(name, self.namespace)

    def wait_ready(self, name: str, marker: str, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pod = self.read(name)
            phase = pod.status.phase
            if phase in ("Succeeded", "Failed"):
                tail = self.log(name)[-300:]
                raise NetbenchError(f"the server pod {name} ended ({phase}) before it listened: {tail}")
            if phase == "Running" and pod.status.pod_ip and marker in self.log(name):
                return pod
            time.sleep(self.poll)
        raise NetbenchError(f"the server pod {name} did not listen within {timeout:g} s")

    def wait_done(self, name: str, timeout: float) -> tuple[str, int | None]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pod = self.read(name)
            if pod.status.phase in ("Succeeded", "Failed"):
                states = [cs.state.terminated for cs in pod.status.container_statuses or [] if cs.state.terminated]
                return self.log(name), (states[0].exit_code if states else None)
            time.sleep(self.poll)
        return self.log(name), None

    def delete(self, name: str) -> None:
        with contextlib.suppress(Exception):  # already gone is fine: teardown must never raise
            self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)


# --- one run ------------------------------------------------------------------------------------
def run(test: str, raw_params: dict[str, Any], side: str, topology: str = "pod->pod", *, node: str = "",
        other_node: str = "", pods: Pods | None = None, timeout_s: float = 120.0,
        on_server: Callable[[Any], None] | None = None) -> Output:
    """One run of `test` on `side` ("host" or "kubernetes") along `topology`; the server is always
    torn down. `on_server(pod)` is called once a server pod listens (e.g. to shape its veth)."""
    template = templates.get(test)
    if test not in NET_TESTS:
        raise templates.TemplateError("not-a-network-test", f"{test} is not a network test ({', '.join(NET_TESTS)})")
    if topology not in TOPOLOGIES:
        raise templates.TemplateError("invalid-params", f"unknown topology {topology!r}; use one of {TOPOLOGIES}")
    params = template.validate(raw_params)
    ready = READY[test]
    if side == "host" or topology == "host->host":  # the argv starts and stops its loopback server (netpair)
        return run_host(template.build_argv({**raw_params, "server": "127.0.0.1"}), timeout_s, "127.0.0.1")
    if pods is None or not node:
        raise NetbenchError("the pod side needs a Kubernetes client (pods) and a node")
    if topology == "pod->host":
        address = host_address()
        with host_server(server_argv(test, params, address), ready):
            return _client_pod(pods, template, raw_params, address, node, timeout_s)
    server_node = other_node if topology == "pod->pod-across-nodes" else node
    if not server_node or server_node == node and topology == "pod->pod-across-nodes":
        raise NetbenchError("pod->pod-across-nodes needs a second node (other_node)")
    name = pods.create(server_node, server_argv(test, params, "0.0.0.0"), "server")
    try:
        pod = pods.wait_ready(name, ready, timeout=30)
        if on_server is not None:
            on_server(pod)
        return _client_pod(pods, template, raw_params, pod.status.pod_ip, node, timeout_s)
    finally:
        pods.delete(name)


def _client_pod(pods: Pods, template: templates.Template, raw: dict[str, Any], server: str, node: str,
                timeout_s: float) -> Output:
    argv = template.build_argv({**raw, "server": server})
    started = _now()
    name = pods.create(node, argv, "client")
    try:
        text, code = pods.wait_done(name, timeout_s)
    finally:
        pods.delete(name)
    return Output(text, code, started, _now(), server)


# --- a cell: interleaved host and pod runs, parsed ------------------------------------------------
def measure(campaign: str, test: str, params: dict[str, Any], topology: str, repetitions: int, *, node: str,
            pods: Pods, other_node: str = "", seed: int = 1, timeout_s: float = 120.0,
            on_server: Callable[[Any], None] | None = None) -> list[events.ResultV1 | events.RunFailedV1]:
    """`repetitions` blocks of one host run (host->host) and one pod run (`topology`) in a seeded random
    order, each parsed like the parser service does (podtax.derive): results or failures with a reason."""
    rng = random.Random(seed)
    clean = templates.get(test).validate(params).model_dump()
    out: list[events.ResultV1 | events.RunFailedV1] = []
    for rep in range(repetitions):
        sides = ["host", "kubernetes"]
        rng.shuffle(sides)
        for side in sides:
            run_spec = events.RunSpec(run_id=f"{campaign}-{test}-{side}-{rep}", campaign=campaign, node=node,
                                      env=side, test=test, params=clean, timeout_s=timeout_s)  # type: ignore[arg-type]
            got = run(test, params, side, topology, node=node, other_node=other_node, pods=pods,
                      timeout_s=timeout_s, on_server=on_server)
            log = events.RawLog(run=run_spec, stdout=got.stdout, exit_code=got.exit_code,
                                started_at=got.started_at, ended_at=got.ended_at, timed_out=got.exit_code is None)
            out.append(derive(log, "podtax/netbench"))
    return out
