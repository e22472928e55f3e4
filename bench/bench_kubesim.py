"""Benchmark podtax kubesim (the SIMULATED Kubernetes API): binding requests per second from the
real `kubernetes` client and watch event fan-out. Prints figures; asserts nothing.

    .venv/bin/python bench/bench_kubesim.py                     # 5,000 nodes, 10,000 pods
    .venv/bin/python bench/bench_kubesim.py --nodes 500 --pods 1000 --watchers 4

The emulator runs as its own process (`python -m podtax_kubesim`, kubelet "none": a bound pod goes
Running, so each binding makes two watch events), as it would beside a scheduler under test.
Clients are separate processes, each with a thread pool of real `kubernetes` clients.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from podtax.oneline_args import OneLineParser

NS = "default"
SCHEDULER = "bench-scheduler"


def configuration(kubeconfig: str):  # type: ignore[no-untyped-def]
    """Server, CA and bearer token of the emulator, from the kubeconfig it wrote."""
    import kubernetes

    config = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(kubeconfig, client_configuration=config)
    config.connection_pool_maxsize = 64
    return config


def client(kubeconfig: str):  # type: ignore[no-untyped-def]
    import kubernetes

    return kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(configuration(kubeconfig)))


def pod_body(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"bench-{i}", "labels": {"app": "bench", "podtax.io/benchmark": "sysbench-cpu"}},
            "spec": {"schedulerName": SCHEDULER, "restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "podtax/bench:1",
                                     "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]}}


def create_slice(url: str, indices: list[int], threads: int) -> None:
    api = client(url)
    def create(i: int) -> None:
        resp = api.create_namespaced_pod(NS, pod_body(i), _preload_content=False)
        resp.data  # noqa: B018 - read the body so the keep-alive connection goes back to the pool

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, indices))


def bind_slice(url: str, work: list[tuple[int, str]], threads: int, start_at: float) -> int:
    import kubernetes

    api = client(url)
    while time.time() < start_at:
        time.sleep(0.001)

    def bind(item: tuple[int, str]) -> int:
        i, node = item
        body = kubernetes.client.V1Binding(metadata=kubernetes.client.V1ObjectMeta(name=f"bench-{i}"),
                                           target=kubernetes.client.V1ObjectReference(kind="Node", name=node))
        # _preload_content=False: the client cannot deserialise the Status that binding returns.
        resp = api.create_namespaced_pod_binding(f"bench-{i}", NS, body, _preload_content=False)
        resp.data  # noqa: B018 - read the body so the keep-alive connection goes back to the pool
        return resp.status

    with ThreadPoolExecutor(threads) as pool:
        return sum(1 for code in pool.map(bind, work) if code == 201)


def watcher(url: str, rv: str, expected: int, ready, out) -> None:  # type: ignore[no-untyped-def]
    import urllib3

    config = configuration(url)
    http = urllib3.PoolManager(ca_certs=config.ssl_ca_cert)
    resp = http.request("GET", f"{config.host}/api/v1/namespaces/{NS}/pods?watch=true&resourceVersion={rv}"
                        f"&fieldSelector=spec.schedulerName%3D{SCHEDULER}", preload_content=False,
                        headers={"Authorization": config.api_key["BearerToken"]})
    ready.set()
    seen, first = 0, None
    for chunk in resp.stream(1 << 16):
        if first is None:
            first = time.time()
        seen += chunk.count(b"\n")
        if seen >= expected:
            break
    out.put((seen, first or time.time(), time.time()))
    resp.release_conn()


def bind_all(url: str, items: list[tuple[int, str]], args: argparse.Namespace,
             start_at: float | None = None) -> tuple[int, float]:
    start_at = start_at or time.time() + 1.0
    with mp.Pool(args.procs) as pool:
        results = [pool.apply_async(bind_slice, (url, s, args.threads, start_at)) for s in split(items, args.procs)]
        bound = sum(r.get() for r in results)
    return bound, time.time() - start_at


def split(items: list, parts: int) -> list[list]:
    return [items[i::parts] for i in range(parts)]


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--watchers", type=int, default=8, help="concurrent watch streams")
    p.add_argument("--procs", type=int, default=2, help="binding client processes")
    p.add_argument("--threads", type=int, default=2, help="threads per binding client process")
    args = p.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-kubesim-"))
    cluster = work / "cluster.yaml"
    cluster.write_text(yaml.safe_dump({"nodes": [{"name": "node-{i}", "count": args.nodes, "arch": "amd64",
                                                   "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}}]}))
    kubeconfig = work / "kubeconfig.yaml"
    server = subprocess.Popen([sys.executable, "-m", "podtax_kubesim", "--cluster", str(cluster), "--kubeconfig",
                               str(kubeconfig), "--kubelet", "none"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        where = line.split(" at ")[1].split(" ")[0]
        print(f"kubesim (SIMULATED) at {where}: {args.nodes} nodes; {args.pods} pods; python {sys.version.split()[0]}; "
              f"{os.cpu_count()} CPUs (server, clients and watchers share them)")
        url = str(kubeconfig)  # the clients read the server, CA and token from it
        t0 = time.time()
        procs = [mp.Process(target=create_slice, args=(url, s, args.threads))
                 for s in split(list(range(args.pods)), args.procs)]
        for pr in procs:
            pr.start()
        for pr in procs:
            pr.join()
        created = time.time() - t0
        print(f"create pods:       {args.pods / created:8.0f} pods/s     ({args.pods} in {created:.2f} s)")

        api = client(url)
        t0 = time.time()
        listing = api.list_namespaced_pod(NS, _preload_content=False)
        json.loads(listing.data)
        print(f"list {args.pods} pods:   {time.time() - t0:8.3f} s (one LIST through the real client, raw)")

        nodes = [f"node-{i}" for i in range(args.nodes)]
        items = [(i, nodes[i % len(nodes)]) for i in range(args.pods)]
        half = len(items) // 2 if args.watchers else len(items)
        bound, elapsed = bind_all(url, items[:half], args)
        print(f"bindings:          {bound / elapsed:8.0f} bindings/s ({bound} x 201 in {elapsed:.2f} s, "
              f"{args.procs} processes x {args.threads} threads, real kubernetes client, no watchers)")
        if not args.watchers:
            return 0

        rv = json.loads(api.list_namespaced_pod(NS, limit=1, _preload_content=False).data)["metadata"][
            "resourceVersion"]
        ready_events, out = [mp.Event() for _ in range(args.watchers)], mp.Queue()
        expected = 2 * (len(items) - half)  # binding + Running, per pod
        watchers = [mp.Process(target=watcher, args=(url, rv, expected, ev, out)) for ev in ready_events]
        for w in watchers:
            w.start()
        for ev in ready_events:
            ev.wait(30)
        time.sleep(0.5)
        start_at = time.time() + 1.0
        bound, elapsed = bind_all(url, items[half:], args, start_at)
        print(f"bindings:          {bound / elapsed:8.0f} bindings/s (the other {bound}, while {args.watchers} "
              f"watchers receive every event)")
        stats = [out.get(timeout=120) for _ in watchers]
        for w in watchers:
            w.join(timeout=10)
        total = sum(s[0] for s in stats)
        span = max(s[2] for s in stats) - start_at
        print(f"watch fan-out:     {total / span:8.0f} events/s delivered ({args.watchers} watchers x "
              f"{expected} events = {total} lines in {span:.2f} s, counted from the first binding)")
        per = [s[0] for s in stats]
        print(f"events per watcher: min {min(per)} max {max(per)} (expected {expected})")
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
