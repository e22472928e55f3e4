"""`make demo`: the main job on one machine, start to finish, in a few minutes.

Starts `podtax up` (embedded nats-server, every service, a local DuckDB, and a SIMULATED
Kubernetes API whose one node is this host, running pods as real local processes in cgroups),
submits a small host + pod campaign of real sysbench runs, follows it, prints the results and the
comparison report, and shuts everything down. One pod cell runs 2 threads under a 1-CPU limit,
so the report shows a real, THROTTLED slowdown next to the cells where pod and host agree.

Then the control plane: `podtax up --nomadsim` again (the emulator's kubelet simulating pods, and a
SIMULATED Nomad API), a volume-churn campaign of 100 volumes on each backend (kubernetes, nomad;
latencies injected by the emulators' cluster files) and a pod start-up campaign, each followed to the
end; `podtax report` prints the phase table side by side with confidence intervals.

Before that, the network cell (podtax.netdemo): iperf3 and sockperf, host->host against pod->pod through
real network namespaces, veth pairs and a bridge made by the emulator's exec kubelet (`--pod-network`),
a campaign like the others; its report shows the ratio with a CI.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml

from podtax import netdemo
from podtax.cli.main import main as cli


def campaign(node: str, threads: int) -> dict:
    return {
        "name": "demo",
        "nodes": [node],
        "environments": ["host", "kubernetes"],
        "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 10000, "events": 2000, "time": 30},
                   "matrix": {"threads": [1, "all"]}}],
        "repetitions": {"min": 6, "max": 6},
        # A Guaranteed pod with one CPU: the `all` cell runs `threads` threads under a 1-CPU limit.
        "pod": {"image": "ghcr.io/podtax/bench:0.1.0", "requests": {"cpu": "1", "memory": "256Mi"},
                "limits": {"cpu": "1", "memory": "256Mi"}},
        "timeout": 120,
        "seed": 1,
    }


def volumes_campaign(node: str) -> dict:
    return {"name": "demo-volumes", "nodes": [node], "environments": ["kubernetes", "nomad"],
            "tests": [{"test": "volume-churn", "params": {"count": 100, "concurrency": 10, "plugin_id": "hostpath"}}],
            "repetitions": {"min": 6, "max": 6}, "timeout": 120, "seed": 1}


def pods_campaign(node: str) -> dict:
    return {"name": "demo-pods", "nodes": [node], "environments": ["kubernetes"],
            "tests": [{"test": "pod-startup", "params": {"count": 20, "concurrency": 10}}],
            "repetitions": {"min": 6, "max": 6}, "timeout": 120, "seed": 1}


def wait_for_node(node: str, timeout: float = 60) -> None:
    import asyncio

    from podtax.bus import Bus, BusError
    from podtax.cli.common import nats_url
    from podtax.subjects import RUNNER_BUCKET, node_key

    waiting = ""  # why the last look found nothing (the runner's bucket not made yet: podtax up is ready first)

    async def known() -> bool:
        nonlocal waiting
        bus = await Bus.connect(nats_url(), "podtax/demo")
        try:
            doc = await Bus.kv_json(await bus.kv(RUNNER_BUCKET), node_key(node)) or {}
            return bool(doc.get("host_agent") and doc.get("kubernetes"))
        except BusError as e:
            waiting = f" ({e})"
            return False
        finally:
            await bus.close()

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if asyncio.run(known()):
            return
        time.sleep(0.5)
    raise SystemExit(f"node {node} was not reported by the host agent and the emulator within {timeout:.0f} s"
                     f"{waiting}")


def start_up(data: Path, node: str, *options: str) -> subprocess.Popen[bytes] | None:
    """`podtax up` in the background until it is ready (None if it failed); sets the CLI's addresses."""
    from podtax import natsserver

    ready = data / "ready.json"
    ready.unlink(missing_ok=True)
    # the demo runs on its embedded parts: a caller's NATS, cluster or Nomad would make `podtax up` refuse them
    for name in ("PODTAX_NATS_URL", "PODTAX_RUNNER_KUBECONFIG", "PODTAX_RUNNER_NOMAD_ADDR"):
        os.environ.pop(name, None)
    up = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(data), "--node", node,
                           "--api-port", str(natsserver.free_port()), "--ready-file", str(ready), *options])
    deadline = time.monotonic() + 90
    while not ready.exists():
        if up.poll() is not None or time.monotonic() > deadline:
            print(f"podtax up failed; see the logs in {data / 'logs'}", file=sys.stderr)
            stop_up(up)
            return None
        time.sleep(0.2)
    info = json.loads(ready.read_text())
    from podtax.localauth import cli_nats_url

    os.environ["PODTAX_NATS_URL"] = cli_nats_url(info["nats_url"], info.get("nats_users_file"))
    os.environ["PODTAX_API_URL"] = info["api_url"]
    wait_for_node(node)
    return up


def stop_up(up: subprocess.Popen[bytes]) -> None:
    up.send_signal(signal.SIGTERM)
    try:
        up.wait(30)
    except subprocess.TimeoutExpired:
        up.kill()


def missed_point(cells: list[dict], threads: int, load: float, cpus: int) -> str | None:
    """Why the demo's report does not show the THROTTLED slowdown it is meant to show, or None when it does.
    `cells`: the report's cells; `threads`: the `all` cell's thread count; `load`: the 1-minute load average."""
    if threads < 2:
        return ("this machine has 1 CPU, so the pod's 1-CPU limit cannot throttle the `all` cell: no cell is "
                "meant to be slower here")
    if any("THROTTLED" in c.get("flags", []) for c in cells if c.get("primary")):
        return None
    return (f"no pod run was throttled this time, so the threads={threads} cell does not show the slowdown it is "
            f"meant to show: the machine was busy (load average {load:.1f} on {cpus} CPUs), so the pod's "
            f"{threads} threads got less CPU than its 1-CPU limit allows; run `make demo` on an idle machine")


def check_point(threads: int) -> None:
    """Say so when this run of the demo missed its point (an audit: under load it showed "pod 21% faster")."""
    from podtax.cli.common import api_url
    from podtax.cli.report import _from_api

    try:
        cells = _from_api(api_url(), "demo", 0.05, "holm")["cells"]
    except Exception:  # noqa: BLE001 - the report printed above already said what went wrong
        return
    if why := missed_point(cells, threads, os.getloadavg()[0], os.cpu_count() or 1):
        print(f"\nNOTE: {why}")


def run_campaign(data: Path, doc: dict) -> int:
    path = data / f"{doc['name']}-campaign.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    print(f"\n== campaign {path}\n{path.read_text()}")
    if cli(["campaign", "submit", str(path)]) != 0:
        return 1
    if cli(["campaign", "status", doc["name"], "--follow", "--timeout", "600"]) != 0:
        print("the campaign did not finish in time", file=sys.stderr)
        return 1
    time.sleep(2)  # the last results reach DuckDB
    return 0


def control_plane(data: Path, node: str) -> int:
    """Volumes on the simulated Kubernetes and Nomad APIs, and pod start-up, with their phase tables."""
    print("\n== the control plane: volumes on kubernetes and nomad, pod start-up (SIMULATED APIs)")
    up = start_up(data, node, "--nomadsim")
    if up is None:
        return 1
    try:
        code = run_campaign(data, volumes_campaign(node)) or run_campaign(data, pods_campaign(node))
        for name in ("demo-volumes", "demo-pods"):
            print(f"\n== podtax report {name}")
            code = code or cli(["report", name])
        return code
    finally:
        stop_up(up)


USAGE = ("usage: python -m podtax.demo [--control-plane-only]\n\n"
         "Runs the demo (`make demo`) in $PODTAX_DEMO_DIR (default .podtax/demo; emptied first: a new, empty\n"
         "or earlier demo's folder, never one holding other files).\n"
         "--control-plane-only: only the volume-churn and pod-startup campaigns (SIMULATED APIs).")


def parse_args(argv: list[str]) -> bool | int:
    """Whether only the control plane runs; or an exit status: 0 after --help, 2 after a usage mistake
    (one line on stderr). Checked before anything starts or the demo's folder is emptied."""
    if "-h" in argv or "--help" in argv:
        print(USAGE + "\n\n" + (__doc__ or "").strip())
        return 0
    if unknown := [a for a in argv if a != "--control-plane-only"]:
        print(f"podtax.demo: unknown argument {unknown[0]!r}; see `python -m podtax.demo --help`", file=sys.stderr)
        return 2
    return "--control-plane-only" in argv


DEFAULT_DIR = ".podtax/demo"
MARKER = ".podtax-demo"  # in every folder the demo made: the only non-empty folder it empties (and the default)


def not_the_demos(data: Path) -> str | None:
    """Why the demo must not empty `data` (a file, or a folder holding files it did not make: PODTAX_DEMO_DIR=$HOME
    would have been removed whole), else None."""
    if not data.exists():
        return None
    if not data.is_dir():
        return f"PODTAX_DEMO_DIR={data} is not a folder: name a new folder (the demo empties it first)"
    if (data / MARKER).exists() or not any(data.iterdir()) or data == Path(DEFAULT_DIR).resolve():
        return None  # an earlier demo's (its marker; a campaign file alone may be a copy a user keeps), empty, default
    return (f"PODTAX_DEMO_DIR={data} holds files the demo did not make, and the demo empties its folder first: "
            f"name a new or empty folder")


def main(argv: list[str] | None = None) -> int:
    only_control_plane = parse_args(sys.argv[1:] if argv is None else argv)
    if not isinstance(only_control_plane, bool):
        return only_control_plane
    given = os.environ.get("PODTAX_DEMO_DIR", DEFAULT_DIR)
    if not given.strip():  # Path("") is the current folder, which the demo empties first
        print(f"podtax.demo: PODTAX_DEMO_DIR is empty: name a new folder, or unset it (default {DEFAULT_DIR})",
              file=sys.stderr)
        return 2
    data = Path(given).resolve()
    if problem := not_the_demos(data):
        print(f"podtax.demo: {problem}", file=sys.stderr)
        return 2
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    (data / MARKER).touch()
    os.environ["PODTAX_DATA_DIR"] = str(data)
    node = socket.gethostname().lower()  # as kubelet registers it (PODTAX_AGENT_NODE takes no capitals)
    if only_control_plane:
        return control_plane(data, node)
    network = not netdemo.unavailable()  # the network cell needs root, iproute2, iperf3 and sockperf
    up = start_up(data, node, "--exec-kubelet", *(["--pod-network"] if network else []))
    if up is None:
        return 1
    try:
        path = data / "demo-campaign.yaml"
        path.write_text(yaml.safe_dump(campaign(node, os.cpu_count() or 1), sort_keys=False))
        print(f"\n== campaign {path}\n{path.read_text()}")
        if cli(["campaign", "submit", str(path)]) != 0:
            return 1
        if cli(["campaign", "status", "demo", "--follow", "--timeout", "600"]) != 0:
            print("the campaign did not finish in time", file=sys.stderr)
            return 1
        time.sleep(2)  # the last results reach DuckDB
        print("\n== results stored in DuckDB")
        code = cli(["results", "--campaign", "demo", "--limit", "100"])
        print("\n== podtax report demo")
        code = code or cli(["report", "demo"])
        if code == 0:
            check_point(os.cpu_count() or 1)
        html, xlsx = data / "report" / "demo.html", data / "report" / "demo.xlsx"
        html.parent.mkdir(exist_ok=True)  # the commands write into a folder that exists, never make one
        print("\n== the HTML report and the workbook (made by the analyzer, fetched over its HTTP API)")
        code = code or cli(["report", "demo", "--html", str(html)]) or cli(["export", "demo", "--xlsx", str(xlsx)])
        if code == 0:
            print(f"HTML report: {html}\nworkbook:    {xlsx}")
        if code == 0 and network:
            print("\n== the network tax: iperf3 and sockperf, host->host (loopback) vs pod->pod (network "
                  "namespaces, veth pairs and a bridge made by the SIMULATED API's exec kubelet)")
            code = run_campaign(data, netdemo.campaign(node)) or cli(["report", netdemo.CAMPAIGN])
        elif not network:
            print(f"\n== network cell skipped: {netdemo.unavailable()}")
    finally:
        stop_up(up)
    code = code or control_plane(data, node)
    if code == 0:  # the demo ends with where its shareable results are
        print(f"\n== done\nHTML report: {html}\nworkbook:    {xlsx}")
    return code


if __name__ == "__main__":
    sys.exit(main())
