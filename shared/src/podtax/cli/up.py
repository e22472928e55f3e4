"""`podtax up`: the whole system on one machine — an embedded nats-server, every service as a
child process, a DuckDB file under the data directory — until Ctrl-C or SIGTERM."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Annotated

import typer
import yaml

from podtax import localauth, natsserver
from podtax.cli.common import DATA_DIR, UP_FILE, a_path, check_settings, console, err, fail, node_name, say
from podtax.cli.up_children import Child, NatsChild, check_port, supervise, wait_started
from podtax.config import host_node, redact
from podtax.flock_holder import holder
from podtax.safefiles import real_path

SERVICES = ("analyzer", "parser", "runner", "host_agent")
RUNNER_SPOOL = "runner-spool"  # under the data dir: the runner's PODTAX_RUNNER_SPOOL_DIR unless set
LOCK_FILE = "up.lock"  # locked (flock) by the `podtax up` using the data dir, holding its pid
# Simulated control plane (volume-churn, pod-startup): a default StorageClass whose provisioner has these
# latencies in the Kubernetes emulator, and a CSI plugin with these in the Nomad stand-in. SIMULATED.
SIM_VOLUMES = {
    "storageClasses": [{"metadata": {"name": "sim-csi", "annotations": {
        "storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "sim.csi.podtax.io",
        "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}],
    "provisioner": {"provisionLatency": {"distribution": "lognormal", "median": 0.05, "sigma": 0.3},
                    "deleteLatency": {"distribution": "lognormal", "median": 0.03, "sigma": 0.3}, "seed": 1},
}
SIM_NOMAD = {"seed": 1, "plugins": [{
    "id": "hostpath", "provider": "hostpath.csi.podtax.io", "controllers": {"healthy": 1, "expected": 1},
    "nodes": {"healthy": 1, "expected": 1}, "createLatency": {"distribution": "lognormal", "median": 0.04,
                                                              "sigma": 0.3}, "deleteLatency": 0.01}]}


def claim(data: Path) -> IO[str]:
    """Lock the data dir for this `podtax up`, or exit 2 naming the one that holds it: two would run two
    nats-servers on one JetStream store and two analyzers on one DuckDB file. The lock lives as long as the
    returned file stays open, and dies with the process (a killed `up` leaves no lock behind)."""
    lock = open(data / LOCK_FILE, "a+")  # noqa: SIM115 - held open for the life of `up`
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pid = holder(lock.fileno()) or "unknown"  # the kernel's word first: the file keeps the last up's pid
        lock.close()
        raise fail(f"the data dir {data} is in use by podtax up (pid {pid}); stop it or pass another --data-dir",
                   2) from None
    try:
        lock.truncate(0)
        lock.write(f"{os.getpid()}\n")
        lock.flush()
    except OSError as exc:  # a full disk gave a traceback here (audit): the first write `up` makes
        with contextlib.suppress(OSError):  # closing flushes the unwritten pid again
            lock.close()
        raise fail(f"--data-dir {data}: cannot write {data / LOCK_FILE} ({exc.strerror}); free space on its disk "
                   f"or choose another --data-dir", 2) from None
    return lock


def _kubesim_child(data: Path, node: str, env: dict[str, str], exec_kubelet: bool = False,
                   pod_network: bool = False) -> tuple[Child, Path]:
    """The SIMULATED Kubernetes API (tools/kubesim) with one node: this host. Its kubelet simulates pods
    unless exec_kubelet, which runs pod commands as local processes (loopback, bearer token)."""
    threads = os.cpu_count() or 1
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    cluster = {"name": "local-sim", "nodes": [{
        "name": node, "arch": arch, "capacity": {"cpu": str(threads), "memory": "16Gi", "pods": "110"}}],
        **SIM_VOLUMES}
    cluster_file = data / "kubesim-cluster.yaml"
    cluster_file.write_text(yaml.safe_dump(cluster))
    kubeconfig = data / "kubeconfig.yaml"
    kubeconfig.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "podtax_kubesim", "--cluster", str(cluster_file), "--kubeconfig",
            str(kubeconfig), "--kubelet", "exec" if exec_kubelet else "simulated"]
    if exec_kubelet and pod_network:
        argv.append("--pod-network")
    return Child("kubesim", argv, env, data / "logs" / "kubesim.log"), kubeconfig


def _nomadsim_child(data: Path, env: dict[str, str]) -> tuple[Child, str]:
    """The SIMULATED Nomad API (tools/nomadsim) with one CSI plugin, 'hostpath', for volume-churn on nomad."""
    cluster_file = data / "nomadsim-cluster.yaml"
    cluster_file.write_text(yaml.safe_dump(SIM_NOMAD))
    port = natsserver.free_port()
    argv = [sys.executable, "-m", "podtax_nomadsim", "--cluster", str(cluster_file), "--port", str(port)]
    return Child("nomadsim", argv, env, data / "logs" / "nomadsim.log"), f"http://127.0.0.1:{port}"


def runner_backends(env: dict[str, str]) -> tuple[str | None, str | None]:
    """The kubeconfig and Nomad address the runner will use (its environment: what up started, or what
    PODTAX_RUNNER_KUBECONFIG / PODTAX_RUNNER_NOMAD_ADDR named), for up.json and the summary: `podtax volumes
    cleanup` in another shell finds them there. The kubeconfig made absolute, as that shell may be elsewhere."""
    kube = env.get("PODTAX_RUNNER_KUBECONFIG")
    if env.get("PODTAX_RUNNER_KUBERNETES", "").lower() in ("false", "0", "no", "off"):
        kube = None
    return (str(real_path(kube)) if kube else None), env.get("PODTAX_RUNNER_NOMAD_ADDR") or None


def pod_network_mode(kubeconfig: Path | None, *, exec_kubelet: bool, pod_network: bool) -> str | None:
    """How the pods of the emulator `up` started are networked, for up.json (`campaign submit` reads it):
    "own" (a network namespace each), "host" (exec kubelet: this host's network, a made-up pod address),
    "simulated" (no process runs); None without the emulator (the runner's cluster decides)."""
    if kubeconfig is None:
        return None
    return ("own" if pod_network else "host") if exec_kubelet else "simulated"


def ignored_option(env: Mapping[str, str], *, nats_port: int | None, kubesim: bool, exec_kubelet: bool,
                   pod_network: bool, nomadsim: bool) -> str | None:
    """What to do instead when an option would change nothing (what it is for is not started), else None."""
    if pod_network and not exec_kubelet:
        return "--pod-network needs --exec-kubelet (only pods run as local processes have a network): add it"
    if exec_kubelet and not kubesim:
        return "--exec-kubelet runs the emulator's pods and --no-kubesim starts no emulator: drop one of them"
    if exec_kubelet and env.get("PODTAX_RUNNER_KUBECONFIG"):
        return ("--exec-kubelet runs the emulator's pods and PODTAX_RUNNER_KUBECONFIG names another cluster (no "
                "emulator is started): drop --exec-kubelet or unset PODTAX_RUNNER_KUBECONFIG")
    if nomadsim and env.get("PODTAX_RUNNER_NOMAD_ADDR"):
        return ("--nomadsim starts a simulated Nomad and PODTAX_RUNNER_NOMAD_ADDR names another (none is "
                "started): drop --nomadsim or unset PODTAX_RUNNER_NOMAD_ADDR")
    if nats_port is not None and env.get("PODTAX_NATS_URL"):  # given, 0 too (a free one)
        return ("--nats-port is the embedded nats-server's and PODTAX_NATS_URL names another server (none is "
                "started): drop --nats-port or unset PODTAX_NATS_URL")
    return None


def up(
    # parser=a_path: an empty path is refused, where typer made it ".", the current folder
    data_dir: Annotated[Path, typer.Option(parser=a_path, metavar="<path>",
                                           help="Where JetStream, DuckDB and logs live.")] = DATA_DIR,
    nats_port: Annotated[int | None, typer.Option(min=0, max=65535, show_default="0",
                                                  help="Port of the embedded nats-server (0 = a free one); none "
                                                  "is started when PODTAX_NATS_URL names a server.")] = None,
    api_port: Annotated[int, typer.Option(min=1, max=65535, help="Port of the analyzer's HTTP API.")] = 8700,
    node: Annotated[str, typer.Option(help="Node name of this host (host agent, emulator).", callback=node_name)]
    = host_node(),
    kubesim: Annotated[bool, typer.Option(help="Run pods on a local SIMULATED Kubernetes API (tools/kubesim).")]
    = True,
    exec_kubelet: Annotated[bool, typer.Option(
        "--exec-kubelet", help="Run pods as local processes on this host (the emulator's exec kubelet; loopback "
        "and a bearer token only). Without it the emulator's kubelet only simulates pods. Not with --no-kubesim or "
        "PODTAX_RUNNER_KUBECONFIG (no emulator is started).")] = False,
    pod_network: Annotated[bool, typer.Option(
        "--pod-network", help="With --exec-kubelet: each pod gets its own network namespace, a veth pair into a "
        "bridge and an address from 198.18.0.0/15 (root only), for the network tests (iperf3, sockperf).")] = False,
    ready_file: Annotated[Path | None, typer.Option(parser=a_path, metavar="<path>",
                                                    help="Write this file once everything is up (what up.json "
                                                         "holds: the addresses), in an existing folder.")] = None,
    nomadsim: Annotated[bool, typer.Option(
        "--nomadsim", help="Also start a SIMULATED Nomad API (tools/nomadsim, CSI plugin 'hostpath') for "
        "volume-churn on nomad; the runner talks to it. Not with PODTAX_RUNNER_NOMAD_ADDR, which names another.")]
    = False,
) -> int:
    """Start NATS and every service locally; stop them all on Ctrl-C or SIGTERM."""
    if problem := ignored_option(os.environ, nats_port=nats_port, kubesim=kubesim, exec_kubelet=exec_kubelet,
                                 pod_network=pod_network, nomadsim=nomadsim):
        raise fail(problem, 2)
    nats_port = nats_port or 0  # not given: a free one
    if ready_file is not None:  # a folder, or a folder that does not exist: said now, not once all is up
        from podtax.cli.export import writable

        writable(ready_file)
    data = real_path(data_dir)  # a loop of links: said by mkdir below, not resolve()'s RuntimeError
    try:
        (data / "logs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file in the way, a read-only or pseudo file system
        say(f"--data-dir {data_dir}: cannot create {data / 'logs'} ({exc.strerror}); "
            f"choose a folder podtax can write (or set PODTAX_DATA_DIR)")
        return 2
    lock = claim(data)  # noqa: F841 - held until `up` returns
    nats = None
    nats_url = os.environ.get("PODTAX_NATS_URL")
    if nats_url:
        check_settings()
    elif nats_port == api_port:
        raise fail(f"--nats-port and --api-port are both {api_port}; give them different ports", 2)
    elif nats_port:
        check_port("--nats-port", nats_port)
    check_port("--api-port", api_port, os.environ.get("PODTAX_ANALYZER_HOST") or "127.0.0.1")
    nats_users: dict[str, str] = {}  # user -> password, when we start nats-server (one per role, the agent's node's)
    if not nats_url:
        log = data / "logs" / "nats-server.log"
        try:
            nats_users, nats_conf = localauth.nats_users(data, node)
        except OSError as exc:
            raise _unusable_secret(data_dir, exc) from None
        # a session of its own, as every child's: a Ctrl-C in the terminal reaches the whole foreground process
        # group, and nats-server stopped at once, before the services it serves (their logs: tracebacks)
        server = natsserver.start(data / "jetstream", nats_port, log_file=log, config=nats_conf, own_session=True)
        nats = NatsChild("nats-server", [], {}, log, proc=server.proc, started=time.monotonic(), server=server)
        nats_url = server.url
    try:  # a Ctrl-C or an error before SIGINT is ours (then the finally below stops all) stops nats-server too
        env = {**os.environ, "PODTAX_NATS_URL": nats_url, "PODTAX_ANALYZER_DB": str(data / "podtax.duckdb"),
               "PODTAX_ANALYZER_PORT": str(api_port), "PODTAX_AGENT_NODE": node,
               "PODTAX_AGENT_WORKDIR": str(data / "work"), "PODTAX_DATA_DIR": str(data)}
        # a report NATS refuses when JetStream's storage is used up is kept on disk, not lost at a restart (spool.py)
        env.setdefault("PODTAX_RUNNER_SPOOL_DIR", str(data / RUNNER_SPOOL))
        try:
            api_token, api_token_file = localauth.api_token(data, env)
        except OSError as exc:
            raise _unusable_secret(data_dir, exc) from None
        env.pop("PODTAX_API_TOKEN", None)  # only the analyzer gets it; the CLI reads the token file
        children: list[Child] = []
        kubeconfig = None
        if kubesim and not env.get("PODTAX_RUNNER_KUBECONFIG"):
            if importlib.util.find_spec("podtax_kubesim") is None:
                err.print("[yellow]tools/kubesim is not installed: pod runs are disabled "
                          "(pip install -e tools/kubesim)[/yellow]")
            else:
                child, kubeconfig = _kubesim_child(data, node, env, exec_kubelet, pod_network)
                children.append(child)
        nomad_addr = None
        if nomadsim:  # with PODTAX_RUNNER_NOMAD_ADDR set, --nomadsim is refused above
            if importlib.util.find_spec("podtax_nomadsim") is None:
                err.print("[yellow]tools/nomadsim is not installed: no simulated Nomad (pip install -e tools/nomadsim)"
                          "[/yellow]")
            else:
                child, nomad_addr = _nomadsim_child(data, env)
                children.append(child)
                env["PODTAX_RUNNER_NOMAD_ADDR"] = nomad_addr
        if kubeconfig:
            env["PODTAX_RUNNER_KUBECONFIG"] = str(kubeconfig)
        elif not env.get("PODTAX_RUNNER_KUBECONFIG"):
            env["PODTAX_RUNNER_KUBERNETES"] = "false"
        runner_kube, runner_nomad = runner_backends(env)
        metrics_urls: dict[str, str] = {}  # every service's /metrics (Prometheus), on its health port
        for svc in SERVICES:
            svc_env = {**env, **(localauth.nats_env(svc, nats_users) if nats_users else {})}  # its own NATS user
            svc_env["PODTAX_HEALTH_PORT"] = str(health_port := natsserver.free_port())
            metrics_urls[svc] = f"http://127.0.0.1:{health_port}/metrics"
            if svc == "analyzer":
                svc_env["PODTAX_API_TOKEN"] = api_token
            children.append(Child(svc, [sys.executable, "-m", f"podtax_{svc}"], svc_env, data / "logs" / f"{svc}.log"))
        if kubeconfig:  # the benchmark-aware scheduler, on the same emulated cluster (one replica: no lease)
            sched_port = natsserver.free_port()
            metrics_urls["scheduler"] = f"http://127.0.0.1:{sched_port}/metrics"
            sched_env = {"PODTAX_SCHEDULER_KUBECONFIG": str(kubeconfig), "PODTAX_SCHEDULER_LEADER_ELECT": "false",
                         "PODTAX_SCHEDULER_METRICS_PORT": str(sched_port)}
            nats_env = localauth.nats_env("scheduler", nats_users) if nats_users else {}
            children.append(Child("scheduler", [sys.executable, "-m", "podtax_scheduler"],
                                  {**sched_env, **env, **nats_env}, data / "logs" / "scheduler.log"))

        stopping = False

        def _stop(*_: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    except BaseException:
        if nats and nats.server:
            nats.server.stop()
        raise
    api_url = f"http://127.0.0.1:{api_port}"
    try:
        for child in children:
            child.start()
            if child.name == "kubesim":
                deadline = time.monotonic() + 15
                while not kubeconfig.exists() and time.monotonic() < deadline:  # type: ignore[union-attr]
                    time.sleep(0.1)
        if failed := wait_started(api_url, children, 30):
            say(failed[0])
            return failed[1]
        info = {"nats_url": nats_url, "api_url": api_url, "data_dir": str(data), "node": node,
                "kubeconfig": runner_kube, "api_token_file": str(api_token_file),
                "nomad_addr": runner_nomad, "metrics": metrics_urls,
                "pod_network": pod_network_mode(kubeconfig, exec_kubelet=exec_kubelet, pod_network=pod_network),
                "nats_users_file": str(data / localauth.NATS_USERS_FILE) if nats_users else None}
        # the NATS URL may hold a password (PODTAX_NATS_URL): the files are the owner's alone, the banner hides it
        localauth.write_private(data / UP_FILE, json.dumps(info, indent=2))
        console.print(f"[bold]podtax is up[/bold]\n  NATS       {redact(nats_url)}" + (" (embedded)" if nats else "")
                      + f"\n  API        {api_url}  (docs: {api_url}/docs)\n  DuckDB     {env['PODTAX_ANALYZER_DB']}"
                      + f"\n  host agent node {node}\n  logs       {data / 'logs'}"
                      + (f"\n  CLI        export PODTAX_DATA_DIR={data}  (podtax commands find this one with it)"
                         if data != Path(".podtax").resolve() else "")
                      + "\n  metrics    " + "\n             ".join(f"{u}  ({n})" for n, u in metrics_urls.items())
                      + (f"\n  kubernetes {kubeconfig} [yellow](SIMULATED by tools/kubesim; pods "
                         + ("run as local processes" if exec_kubelet else "simulated, --exec-kubelet runs them")
                         + ")[/yellow]"
                         if kubeconfig else f"\n  kubernetes {runner_kube} (PODTAX_RUNNER_KUBECONFIG)"
                         if runner_kube else "\n  kubernetes off (no pod runs)")
                      + (f"\n  nomad      {nomad_addr} [yellow](SIMULATED by tools/nomadsim)[/yellow]"
                         if nomad_addr else f"\n  nomad      {runner_nomad} (PODTAX_RUNNER_NOMAD_ADDR)"
                         if runner_nomad else "")
                      + "\nCtrl-C stops everything.", highlight=False)
        if ready_file:
            localauth.write_private(ready_file, json.dumps(info))
        while not stopping:
            time.sleep(0.2)
            if stopping:
                break
            problem = supervise(([nats] if nats else []) + children, time.monotonic())
            if problem:
                say(problem)
                return 1
        return 0
    finally:
        _tell("stopping ...")  # a closed stdout (`podtax up | head`) must not leave the children running
        for child in reversed(children):
            child.stop()
        if nats and nats.server:
            nats.server.stop()
        (data / UP_FILE).unlink(missing_ok=True)
        _tell("stopped")


def _unusable_secret(data_dir: Path, exc: OSError) -> typer.Exit:
    """A secret file `up` keeps in its data directory (api-token, nats-users.json...) that is a folder, unreadable
    or on a full disk: one line naming it, not a traceback."""
    name = exc.filename2 or exc.filename  # os.replace(tmp, path) names the file it could not replace second
    return fail(f"--data-dir {data_dir}: cannot use {name} ({exc.strerror}); remove it, or make it a file "
                "podtax can read and write", 2)


def _tell(text: str) -> None:
    """Print a line of the shutdown; a reader that went away (a closed pipe) is no reason to stop less.
    rich answers a broken pipe with SystemExit(1), after pointing stdout at /dev/null."""
    with contextlib.suppress(OSError, SystemExit):
        console.print(text)


def register(app: typer.Typer) -> None:
    app.command()(up)
