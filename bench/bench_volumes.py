"""Benchmark: the volume-churn harness against both emulators with zero provisioning latency.

Each emulator runs in its own process (podtax-kubesim, podtax-nomadsim). Per backend and
repetition: the harness creates `--count` volumes (Kubernetes: and waits for Bound and the PV),
deletes them and waits until they are gone (Kubernetes: the PV too), watching rather than polling.
The anchor, measured in the same repetition against the same emulator: the bare client (the
kubernetes client / httpx) creating and deleting as many volumes with the same concurrency and
no observation at all. Prints volumes/s of the harness and of the anchor, their ratio, and the
harness's requests per volume: the median of `--reps` runs, with the load average.
Target: >= 500 volumes/s and O(1) requests per volume. No assertions.

    .venv/bin/python bench/bench_volumes.py [--count 1000] [--concurrency 32] [--reps 3]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import yaml
from kubernetes import client, config
from podtax import config as podtax_config
from podtax import events, natsserver, templates
from podtax.oneline_args import OneLineParser
from podtax_runner.controlplane.execute import execute
from podtax_runner.controlplane.nomad import NomadConfig, volume_body

NODE = "bench-node"
KUBE_CLUSTER = {
    "nodes": [{"name": NODE, "capacity": {"cpu": "8", "memory": "16Gi"}}],
    "storageClasses": [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                        "metadata": {"name": "bench", "annotations": {
                            "storageclass.kubernetes.io/is-default-class": "true"}},
                        "provisioner": "bench.csi.podtax.io", "reclaimPolicy": "Delete"}],
    "provisioner": {"provisionLatency": 0, "deleteLatency": 0},
    "namespaces": ["bench"],
}
NOMAD_CLUSTER = {"plugins": [{"id": "bench", "createLatency": 0, "deleteLatency": 0}]}


def wait_http(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1, verify=False)  # noqa: S501 - the emulator's own self-signed certificate
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit(f"emulator at {url} did not start")


def start_emulators(tmp: Path) -> tuple[list[subprocess.Popen[bytes]], Path, str]:
    (tmp / "kube.yaml").write_text(yaml.safe_dump(KUBE_CLUSTER))
    (tmp / "nomad.yaml").write_text(yaml.safe_dump(NOMAD_CLUSTER))
    kport, nport = natsserver.free_port(), natsserver.free_port()
    bindir = Path(sys.executable).parent
    procs = [subprocess.Popen([str(bindir / "podtax-kubesim"), "--cluster", str(tmp / "kube.yaml"), "--kubelet", "none",
                               "--kubeconfig", str(tmp / "kubeconfig"), "--port", str(kport)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen([sys.executable, "-m", "podtax_nomadsim", "--cluster", str(tmp / "nomad.yaml"),
                               "--port", str(nport)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    wait_http(f"https://127.0.0.1:{kport}/healthz")
    wait_http(f"http://127.0.0.1:{nport}/v1/status/leader")
    while not (tmp / "kubeconfig").exists():
        time.sleep(0.05)
    return procs, tmp / "kubeconfig", f"http://127.0.0.1:{nport}"


def harness(backend: str, rep: int, count: int, concurrency: int, kubeconfig: Path, nomad: str) -> tuple[float, float]:
    params = {"count": count, "concurrency": concurrency, **({"plugin_id": "bench"} if backend == "nomad" else {})}
    run = events.RunSpec(run_id=f"bench-{backend}-{rep}-{time.time_ns()}", campaign="bench", node=NODE, env=backend,
                         test="volume-churn", params=templates.get("volume-churn").validate(params).model_dump(),
                         timeout_s=600)
    settings = podtax_config.load(podtax_config.RunnerSettings, runner_kubeconfig=kubeconfig,
                                  runner_namespace="bench")
    t = time.perf_counter()
    tl = execute(run, settings, nomad_cfg=NomadConfig(address=nomad))
    wall = time.perf_counter() - t
    summary = json.loads(tl.jsonl().splitlines()[-1])
    if summary["errors"] or summary["left_behind"]:
        raise SystemExit(f"{backend}: {summary}")
    return count / wall, sum(summary["requests"].values()) / count


def anchor(backend: str, rep: int, count: int, concurrency: int, kubeconfig: Path, nomad: str) -> float:
    """The bare client: create then delete `count` volumes, nothing observed."""
    names = [f"anchor-{rep}-{i:05d}" for i in range(count)]
    if backend == "kubernetes":
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        cfg.connection_pool_maxsize = concurrency + 4
        core = client.CoreV1Api(client.ApiClient(cfg))

        def create(name: str) -> Any:
            body = {"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                         "resources": {"requests": {"storage": "1Gi"}}}}
            return core.create_namespaced_persistent_volume_claim("bench", body, _preload_content=False).data

        def delete(name: str) -> Any:
            return core.delete_namespaced_persistent_volume_claim(name, "bench", _preload_content=False).data
    else:
        http = httpx.Client(base_url=nomad, limits=httpx.Limits(max_connections=concurrency + 4))
        vc = templates.get("volume-churn").validate({"plugin_id": "bench"})

        def create(name: str) -> Any:
            return http.put(f"/v1/volume/csi/{name}/create", json=volume_body(name, "default", vc)).raise_for_status()

        def delete(name: str) -> Any:
            return http.delete(f"/v1/volume/csi/{name}/delete").raise_for_status()
    t = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as ex:
        list(ex.map(create, names))
        list(ex.map(delete, names))
    return count / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="podtax-bench-volumes-") as tmp:
        procs, kubeconfig, nomad = start_emulators(Path(tmp))
        try:
            for backend in ("kubernetes", "nomad"):
                rates, anchors, reqs = [], [], []
                for rep in range(args.reps):
                    a = anchor(backend, rep, args.count, args.concurrency, kubeconfig, nomad)
                    r, q = harness(backend, rep, args.count, args.concurrency, kubeconfig, nomad)
                    rates.append(r)
                    anchors.append(a)
                    reqs.append(q)
                    print(f"  {backend} rep {rep + 1}: harness {r:7.0f} volumes/s  anchor {a:7.0f} volumes/s  "
                          f"{q:.2f} requests/volume", flush=True)
                h, a = statistics.median(rates), statistics.median(anchors)
                print(f"{backend:10s} harness {h:7.0f} volumes/s (create+bind+delete, watched)  anchor {a:7.0f} "
                      f"volumes/s (bare client create+delete)  ratio {h / a:.2f}  "
                      f"requests/volume {statistics.median(reqs):.2f}  [median of {args.reps}, "
                      f"{args.count} volumes, concurrency {args.concurrency}]")
            print(f"load average: {' '.join(Path('/proc/loadavg').read_text().split()[:3])} "
                  f"(cpus: {os.cpu_count()})")
        finally:
            for p in procs:
                p.terminate()
                p.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
