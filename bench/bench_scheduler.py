"""Scheduler throughput and latency against the Kubernetes emulator (simulated kubelet).

For each cluster size it starts nats-server, the emulator (`podtax-kubesim`, own process) and the
scheduler (`python -m podtax_scheduler`, own process), writes a score for every node into the KV
bucket, then:

- burst: creates `--pods` pending pods BEFORE the scheduler starts, then reports bound pods per
  second from the first bind to the last (the scheduler's own throughput, not the client's
  create rate);
- steady: creates pods at `--rate` per second for `--steady-s` seconds and reports the
  create-to-bound latency of a scheduler that is not saturated;
- cpu: the scheduler process's CPU time (user + system, from /proc) per pod of the burst;
- anchor: in the same run, the emulator's own bind rate with no scheduling at all (16 threads
  binding pods round-robin through the same client code, `Kube.bind`), and the scheduler's burst
  rate as a ratio of it.

Scores carry 95% intervals (n >= 6) so the uncertainty-aware scoring path is the one measured.

    .venv/bin/python bench/bench_scheduler.py                    # 100, 1,000 and 5,000 nodes
    .venv/bin/python bench/bench_scheduler.py --sizes 100 --pods 300 --steady-s 3

Prints figures only; no assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from anchor import loadavg
from kubernetes import client, config
from kubernetes.watch.watch import iter_resp_lines
from podtax import natsserver, subjects
from podtax.bus import Bus
from podtax.events import NodeScore, now
from podtax.oneline_args import OneLineParser
from podtax_kubesim.cluster import expand_nodes, generated

PY = sys.executable


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def wait_port_file(path: Path, proc: subprocess.Popen[bytes], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text().strip():
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not start within {timeout:.0f}s")
        time.sleep(0.1)


async def put_scores(nats_url: str, node_names: list[str], cluster: str) -> None:
    bus = await Bus.connect(nats_url, "bench")
    try:
        kv = await bus.kv(subjects.SCORES_BUCKET)
        for i, name in enumerate(node_names):
            s = NodeScore(cluster=cluster, node=name, env="kubernetes", test="sysbench-cpu", params_key="threads=1",
                          metric="events_per_second", unit="events/s", higher_is_better=True,
                          median=1000 + (i * 7919) % 997, mean=1000 + (i * 7919) % 997, n=5 + i % 50,
                          updated_at=now())
            if s.n >= 6:
                s = s.model_copy(update={"ci_low": s.median * 0.99, "ci_high": s.median * 1.01})
            await kv.put(subjects.score_key(cluster, "kubernetes", name, s.test, s.metric, s.params_key),
                         s.model_dump_json().encode())
    finally:
        await bus.close()


def pod_body(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"test": "sysbench-cpu", "bench": "scheduler"},
                         "annotations": {"podtax.io/sim-duration-seconds": "3600"}},
            "spec": {"schedulerName": "benchmark-scheduler", "containers": [{
                "name": "main", "image": "busybox",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


class Watcher(threading.Thread):
    """Records when each pod is first seen with spec.nodeName."""

    def __init__(self, core: client.CoreV1Api, rv: str) -> None:
        super().__init__(daemon=True)
        self.core, self.rv = core, rv
        self.bound: dict[str, float] = {}
        self.nodes: dict[str, str] = {}
        self.stop = False

    def run(self) -> None:
        while not self.stop:
            resp = self.core.list_namespaced_pod("default", watch=True, resource_version=self.rv,
                                                 timeout_seconds=60, _preload_content=False,
                                                 _request_timeout=(10, 90))
            for line in iter_resp_lines(resp):
                if self.stop:
                    return
                if not line:
                    continue
                ev = json.loads(line)
                obj = ev.get("object") or {}
                self.rv = (obj.get("metadata") or {}).get("resourceVersion", self.rv)
                name = (obj.get("metadata") or {}).get("name")
                node = (obj.get("spec") or {}).get("nodeName")
                if node and name not in self.bound:
                    self.bound[name] = time.monotonic()
                    self.nodes[name] = node


def create_pods(core: client.CoreV1Api, names: list[str], created: dict[str, float], rate: float | None,
                workers: int = 8) -> None:
    start = time.monotonic()

    def one(k: int, name: str) -> None:
        if rate:
            delay = start + k / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        created[name] = time.monotonic()
        core.create_namespaced_pod("default", pod_body(name), _preload_content=False)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda kv: one(*kv), enumerate(names)))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def anchor_binds(kubeconfig: Path, core: client.CoreV1Api, node_names: list[str], pods: int) -> float:
    """Pods bound per second by plain API calls (no scheduling): the emulator's ceiling on this machine."""
    from podtax_scheduler.kube import Kube, api_client

    kube = Kube(api_client(kubeconfig, pool=16))
    names = [f"anchor-{i}" for i in range(pods)]
    uids: dict[str, str] = {}
    for name in names:
        body = pod_body(name)
        body["spec"]["schedulerName"] = "nobody"
        uids[name] = json.loads(core.create_namespaced_pod("default", body, _preload_content=False).data)[
            "metadata"]["uid"]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda kv: kube.bind("default", kv[1], uids[kv[1]], node_names[kv[0] % len(node_names)]),
                      enumerate(names)))
    return pods / (time.perf_counter() - t0)


def wait_bound(w: Watcher, names: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(n in w.bound for n in names):
        time.sleep(0.05)


def report(label: str, names: list[str], created: dict[str, float], w: Watcher,
           backlog: bool) -> dict[str, float]:
    done = [n for n in names if n in w.bound]
    out: dict[str, float] = {"pods": len(names), "bound": len(done)}
    if backlog:  # throughput of the scheduler draining a backlog: first bind to last bind
        times = sorted(w.bound[n] for n in done)
        span = times[-1] - times[0] if len(times) > 1 else float("nan")
        out["pods_per_s"] = (len(times) - 1) / span if len(times) > 1 else 0.0
        print(f"  {label:7s} {len(done):>5}/{len(names):<5} bound  {out['pods_per_s']:8.1f} pods/s", flush=True)
        return out
    lat = [w.bound[n] - created[n] for n in done]
    out.update(p50_ms=percentile(lat, 50) * 1000, p99_ms=percentile(lat, 99) * 1000)
    print(f"  {label:7s} {len(done):>5}/{len(names):<5} bound  p50 {out['p50_ms']:8.1f} ms  "
          f"p99 {out['p99_ms']:8.1f} ms  (create to bound)", flush=True)
    return out


def run_size(nodes: int, pods: int, rate: float, steady_s: float, workdir: Path) -> dict[str, Any]:
    cluster = generated(nodes)
    node_names = [n["name"] for n in expand_nodes(cluster)]
    cfile = workdir / "cluster.yaml"
    cfile.write_text(yaml.safe_dump(cluster))
    kubeconfig = workdir / "kubeconfig.yaml"
    nats = natsserver.start(workdir / "js", log_file=workdir / "nats.log")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        t0 = time.monotonic()
        sim = subprocess.Popen([PY, "-m", "podtax_kubesim", "--cluster", str(cfile), "--kubeconfig", str(kubeconfig),
                                "--kubelet", "simulated"], stdout=subprocess.DEVNULL,
                               stderr=open(workdir / "kubesim.log", "wb"))  # noqa: SIM115
        procs.append(sim)
        wait_port_file(kubeconfig, sim, "podtax-kubesim")
        cfg = client.Configuration()
        config.load_kube_config(str(kubeconfig), client_configuration=cfg)
        cfg.connection_pool_maxsize = 16
        core = client.CoreV1Api(client.ApiClient(cfg))
        while True:
            try:
                if len(json.loads(core.list_node(_preload_content=False).data)["items"]) >= nodes:
                    break
            except Exception:  # noqa: BLE001 - not serving yet
                pass
            time.sleep(0.2)
        asyncio.run(put_scores(nats.url, node_names, "local"))
        print(f"{nodes} nodes (set-up {time.monotonic() - t0:.1f}s)", flush=True)
        rv = json.loads(core.list_namespaced_pod("default", _preload_content=False).data)["metadata"]["resourceVersion"]
        w = Watcher(core, rv)
        w.start()
        results: dict[str, Any] = {"nodes": nodes}
        created: dict[str, float] = {}
        burst = [f"burst-{i}" for i in range(pods)]
        create_pods(core, burst, created, None)
        env = dict(os.environ, PODTAX_NATS_URL=nats.url, PODTAX_SCHEDULER_KUBECONFIG=str(kubeconfig),
                   PODTAX_SCHEDULER_METRICS_PORT="0", PODTAX_SCHEDULER_LEADER_ELECT="false",
                   PODTAX_LOG_FORMAT="text", PODTAX_LOG_LEVEL="INFO", PODTAX_CLUSTER="local")
        log_path = workdir / "scheduler.log"
        sched = subprocess.Popen([PY, "-m", "podtax_scheduler"], env=env, stdout=subprocess.DEVNULL,
                                 stderr=open(log_path, "wb"))  # noqa: SIM115
        procs.append(sched)
        deadline = time.monotonic() + 120
        while "started" not in log_path.read_text():
            if sched.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"scheduler did not start:\n{log_path.read_text()[-2000:]}")
            time.sleep(0.1)
        cpu0, sim0 = cpu_seconds(sched.pid), cpu_seconds(sim.pid)
        wait_bound(w, burst, timeout=max(60, pods / 20))
        cpu_ms = (cpu_seconds(sched.pid) - cpu0) * 1000 / max(1, len(burst))
        sim_ms = (cpu_seconds(sim.pid) - sim0) * 1000 / max(1, len(burst))
        results["burst"] = report("burst", burst, created, w, backlog=True)
        results["burst"]["cpu_ms_per_pod"] = cpu_ms
        results["burst"]["emulator_cpu_ms_per_pod"] = sim_ms
        print(f"  cpu     {cpu_ms:8.2f} ms of scheduler CPU per pod, {sim_ms:.2f} ms of emulator CPU per pod "
              "(burst; the emulator also serves the bench's watch)", flush=True)
        steady = [f"steady-{i}" for i in range(int(rate * steady_s))]
        create_pods(core, steady, created, rate)
        wait_bound(w, steady, timeout=60)
        results["steady"] = report(f"{rate:.0f}/s", steady, created, w, backlog=False)
        sim0 = cpu_seconds(sim.pid)
        anchor = anchor_binds(kubeconfig, core, node_names, min(pods, 1000))
        results["anchor_binds_per_s"] = anchor
        results["anchor_emulator_cpu_ms_per_pod"] = (cpu_seconds(sim.pid) - sim0) * 1000 / max(1, min(pods, 1000))
        results["ratio_to_anchor"] = results["burst"]["pods_per_s"] / anchor
        print(f"  anchor  {anchor:8.1f} plain binds/s (no scheduling; emulator CPU "
              f"{results['anchor_emulator_cpu_ms_per_pod']:.2f} ms per pod, creates included); scheduler burst = "
              f"{results['ratio_to_anchor']:.2f} x anchor  ({loadavg()})", flush=True)
        w.stop = True
        return results
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        nats.stop()


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100,1000,5000", help="comma-separated node counts")
    ap.add_argument("--pods", type=int, default=2000, help="pods in the burst at each size")
    ap.add_argument("--rate", type=float, default=50.0, help="pods per second in the steady phase")
    ap.add_argument("--steady-s", type=float, default=10.0, help="length of the steady phase")
    ap.add_argument("--quick", action="store_true", help="100 nodes, 300 pods, 3 s steady phase")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.pods, args.steady_s = "100", 300, 3.0
    print(f"scheduler benchmark on {os.cpu_count()} cpus; burst of {args.pods} pods, then {args.rate:.0f} pods/s "
          f"for {args.steady_s:.0f}s (latency = create to bound, seen by a watch)", flush=True)
    all_results = []
    for size in [int(s) for s in args.sizes.split(",") if s]:
        with tempfile.TemporaryDirectory(prefix="podtax-bench-sched-") as tmp:
            all_results.append(run_size(size, args.pods, args.rate, args.steady_s, Path(tmp)))
    print(json.dumps(all_results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
