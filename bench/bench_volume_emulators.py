"""Benchmark the two SIMULATED volume backends with zero provisioning latency: how many volumes per
second each emulator creates (+ binds) and deletes when driven by a lean async HTTP client, so that
the harness's own target (>= 500 volumes/s, bench_volumes.py) is not capped by the emulators.
Prints figures; asserts nothing.

    .venv/bin/python bench/bench_volume_emulators.py [--volumes 1000] [--concurrency 50] [--runs 3]

Each emulator runs as its own process (`python -m podtax_kubesim` / `python -m podtax_nomadsim`).
kubesim: POST each claim, one watch on claims until all are Bound, DELETE each claim, one watch on
PVs until every PV's DELETED event (the provisioner's finalizer done). nomadsim: PUT .../create and
DELETE .../delete per volume (both block until the simulated plugin answers). The anchor, measured in
the same run against the same server, is the rate of a trivial request (GET /version,
GET /v1/status/leader) at the same concurrency; the ratio says how many trivial requests one
volume costs.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml
from podtax.oneline_args import OneLineParser

NS = "default"
CLUSTER_K8S = {"nodes": [{"name": "n1"}], "storageClasses": [{
    "metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
    "provisioner": "sim.csi.podtax.io", "reclaimPolicy": "Delete"}],
    "provisioner": {"provisionLatency": 0, "deleteLatency": 0}}
CLUSTER_NOMAD = {"plugins": [{"id": "hostpath", "createLatency": 0, "deleteLatency": 0}]}


async def gather_limited(n: int, limit: int, fn) -> None:  # type: ignore[no-untyped-def]
    sem = asyncio.Semaphore(limit)

    async def one(i: int) -> None:
        async with sem:
            await fn(i)

    await asyncio.gather(*(one(i) for i in range(n)))


async def anchor(client: httpx.AsyncClient, path: str, n: int, limit: int) -> float:
    t0 = time.perf_counter()

    async def get(_: int) -> None:
        (await client.get(path)).raise_for_status()

    await gather_limited(n, limit, get)
    return n / (time.perf_counter() - t0)


async def watch_until(client: httpx.AsyncClient, path: str, rv: str, done, started: asyncio.Event) -> None:  # type: ignore[no-untyped-def]
    async with client.stream("GET", path, params={"watch": "true", "resourceVersion": rv,
                                                  "timeoutSeconds": "120"}, timeout=None) as resp:
        started.set()
        async for line in resp.aiter_lines():
            if line and done(json.loads(line)):
                return


async def kube_run(url: str, token: str, ca: ssl.SSLContext | bool, n: int, limit: int, tag: str) -> dict:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = httpx.Limits(max_connections=limit + 4, max_keepalive_connections=limit + 4)
    async with httpx.AsyncClient(base_url=url, headers=headers, verify=ca, limits=limits, timeout=60) as client:
        rate = await anchor(client, "/version", n, limit)
        rv = (await client.get(f"/api/v1/namespaces/{NS}/persistentvolumeclaims")).json()["metadata"]["resourceVersion"]
        names = {f"{tag}-{i:05d}" for i in range(n)}
        bound: set[str] = set()
        gone: set[str] = set()

        def all_bound(ev: dict) -> bool:
            obj = ev["object"]
            if ev["type"] == "MODIFIED" and obj.get("status", {}).get("phase") == "Bound":
                bound.add(obj["metadata"]["name"])
            return names <= bound

        def all_pvs_gone(ev: dict) -> bool:
            if ev["type"] == "DELETED":
                gone.add(ev["object"]["spec"]["claimRef"]["name"])
            return names <= gone

        t0 = time.perf_counter()
        started = asyncio.Event()
        watcher = asyncio.create_task(watch_until(client, f"/api/v1/namespaces/{NS}/persistentvolumeclaims", rv,
                                                  all_bound, started))
        await started.wait()

        async def create(i: int) -> None:
            body = {"metadata": {"name": f"{tag}-{i:05d}"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
            (await client.post(f"/api/v1/namespaces/{NS}/persistentvolumeclaims", json=body)).raise_for_status()

        await gather_limited(n, limit, create)
        await watcher
        t1 = time.perf_counter()
        rv = (await client.get("/api/v1/persistentvolumes")).json()["metadata"]["resourceVersion"]
        started = asyncio.Event()
        watcher = asyncio.create_task(watch_until(client, "/api/v1/persistentvolumes", rv, all_pvs_gone, started))
        await started.wait()

        async def delete(i: int) -> None:
            (await client.delete(f"/api/v1/namespaces/{NS}/persistentvolumeclaims/{tag}-{i:05d}")).raise_for_status()

        await gather_limited(n, limit, delete)
        await watcher
        t2 = time.perf_counter()
    return {"create_bound_per_s": n / (t1 - t0), "delete_pv_gone_per_s": n / (t2 - t1), "cycle_per_s": n / (t2 - t0),
            "anchor_per_s": rate, "n": n}


async def nomad_run(url: str, n: int, limit: int, tag: str) -> dict:
    limits = httpx.Limits(max_connections=limit, max_keepalive_connections=limit)
    caps = [{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}]
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
        rate = await anchor(client, "/v1/status/leader", n, limit)
        t0 = time.perf_counter()

        async def create(i: int) -> None:
            vol = {"ID": f"{tag}-{i:05d}", "Name": f"{tag}-{i:05d}", "PluginID": "hostpath",
                   "RequestedCapacityMin": 1 << 30, "RequestedCapabilities": caps}
            (await client.put(f"/v1/volume/csi/{tag}-{i:05d}/create", json={"Volumes": [vol]})).raise_for_status()

        await gather_limited(n, limit, create)
        t1 = time.perf_counter()

        async def delete(i: int) -> None:
            (await client.delete(f"/v1/volume/csi/{tag}-{i:05d}/delete")).raise_for_status()

        await gather_limited(n, limit, delete)
        t2 = time.perf_counter()
    return {"create_per_s": n / (t1 - t0), "delete_per_s": n / (t2 - t1), "cycle_per_s": n / (t2 - t0),
            "anchor_per_s": rate, "n": n}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (from /proc): the emulator's own cost, whatever the load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pid: int, run) -> dict:  # type: ignore[no-untyped-def]
    """Run one benchmark coroutine; add the emulator's CPU milliseconds per volume."""
    before = cpu_seconds(pid)
    out = asyncio.run(run)
    out["emulator_cpu_ms_per_volume"] = (cpu_seconds(pid) - before) * 1000 / out.pop("n")
    return out


def start(cmd: list[str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if " at " not in line:
        proc.kill()
        raise SystemExit(f"emulator did not start: {line!r}")
    return proc, line.split(" at ")[1].split()[0].rstrip(",;")


def summary(name: str, runs: list[dict]) -> None:
    keys = runs[0].keys()
    med = {k: statistics.median(r[k] for r in runs) for k in keys}
    figures = ", ".join(f"{k} {med[k]:,.2f}" if k.endswith("_ms_per_volume") else f"{k} {med[k]:,.0f}"
                        for k in keys)
    print(f"{name}: median of {len(runs)} runs: {figures}; ratio cycle/anchor "
          f"{med['cycle_per_s'] / med['anchor_per_s']:.3f}; one core could serve "
          f"{1000 / med['emulator_cpu_ms_per_volume']:,.0f} volumes/s (create+delete cycle)")


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("--volumes", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=50)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        kcluster, ncluster, kubeconfig = Path(tmp, "k.yaml"), Path(tmp, "n.yaml"), Path(tmp, "kubeconfig")
        kcluster.write_text(yaml.safe_dump(CLUSTER_K8S))
        ncluster.write_text(yaml.safe_dump(CLUSTER_NOMAD))
        kproc, kurl = start([sys.executable, "-m", "podtax_kubesim", "--cluster", str(kcluster), "--kubeconfig",
                             str(kubeconfig), "--kubelet", "none"])
        nproc, nurl = start([sys.executable, "-m", "podtax_nomadsim", "--cluster", str(ncluster)])
        try:
            cfg = yaml.safe_load(kubeconfig.read_text())
            token = (cfg["users"][0]["user"] or {}).get("token", "")
            ca_data = cfg["clusters"][0]["cluster"].get("certificate-authority-data")
            ca: ssl.SSLContext | bool = False
            if ca_data:
                import base64

                ca = ssl.create_default_context(cadata=base64.b64decode(ca_data).decode())
            print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
            kube = [measured(kproc.pid, kube_run(kurl, token, ca, args.volumes, args.concurrency, f"b{r}"))
                    for r in range(args.runs)]
            nomad = [measured(nproc.pid, nomad_run(nurl, args.volumes, args.concurrency, f"b{r}"))
                     for r in range(args.runs)]
            print(f"load average after: {Path('/proc/loadavg').read_text().strip()} ({os.cpu_count()} CPUs)")
            summary(f"kubesim   {args.volumes} claims (create+Bound, delete+PV DELETED)", kube)
            summary(f"nomadsim  {args.volumes} CSI volumes (create, delete)", nomad)
        finally:
            for proc in (kproc, nproc):
                proc.terminate()
                proc.wait(timeout=15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
