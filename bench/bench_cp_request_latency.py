"""Benchmark: what the control-plane benchmark times of a Kubernetes create and delete, against the bare request.

volume-churn on kubesim (zero provisioning latency, its own process), `--count` claims at `--concurrency`,
watched. Per repetition, the median over the claims of:
  harness  a create as the runner times it (request_sent -> api_accepted: the `accepted` phase, and the start of
           every other phase) and a delete (delete_requested -> delete_accepted, the start of `deleted`);
  client   the same requests through the runner's Kube.call and api_client alone (no run, no watches);
  bare     the same requests sent with urllib3 alone: the client's own pool manager (same TLS, token, keep-alive),
           the body serialised once;
and kubesim's own time per request of each (apiserver_request_duration_seconds, sum / count: a mean), measured
around the same three. All at the same concurrency against the same kubesim, interleaved. Prints each one's
median over `--reps`, harness / bare and client / bare, and the load average. No assertions.

    .venv/bin/python bench/bench_cp_request_latency.py [--count 100] [--concurrency 10] [--reps 3]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from anchor import loadavg
from bench_volumes import NODE, start_emulators
from kubernetes import client
from podtax import config as podtax_config
from podtax import events, templates
from podtax.oneline_args import OneLineParser
from podtax_runner.controlplane.execute import execute, kube_client
from podtax_runner.controlplane.kubeapi import Kube, request_totals

NS = "bench"
VERBS = {"create": "POST", "delete": "DELETE"}
Times = dict[str, float]  # verb -> median ms (or the server's mean ms)


def body(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "labels": {"b": "1"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def server_time(api: client.ApiClient) -> dict[str, tuple[float, float]]:
    """kubesim's request durations so far: verb -> (seconds summed, requests) of claims' creates and deletes."""
    cfg = api.configuration
    resp = api.rest_client.pool_manager.request("GET", f"{cfg.host}/metrics", headers=auth(cfg))
    text = resp.data.decode()
    labels = ("verb", "resource", "subresource")
    sums = request_totals(text, "apiserver_request_duration_seconds_sum", labels)
    counts = request_totals(text, "apiserver_request_duration_seconds_count", labels)
    return {verb: (sums.get(f"{method} persistentvolumeclaims ", 0.0), counts.get(f"{method} persistentvolumeclaims ",
                                                                                    0.0))
            for verb, method in VERBS.items()}


def server_ms(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]) -> Times:
    return {verb: 1000 * (after[verb][0] - before[verb][0]) / max(1.0, after[verb][1] - before[verb][1])
            for verb in VERBS}


def auth(cfg: client.Configuration) -> dict[str, str]:
    token = cfg.auth_settings().get("BearerToken")
    return {token["key"]: token["value"]} if token else {}


def each(concurrency: int, names: list[str], send: Callable[[str], object]) -> tuple[float, float]:
    """Send one request per name, `concurrency` at a time: the medians of their wall and thread CPU times, in ms."""
    def one(name: str) -> tuple[float, float]:
        t, c = time.perf_counter(), time.thread_time()
        send(name)
        return 1000 * (time.perf_counter() - t), 1000 * (time.thread_time() - c)

    with ThreadPoolExecutor(concurrency) as ex:
        walls, cpus = zip(*ex.map(one, names), strict=True)
    return statistics.median(walls), statistics.median(cpus)


def verbs(create: tuple[float, float], delete: tuple[float, float]) -> Times:
    return {"create": create[0], "delete": delete[0], "create cpu": create[1], "delete cpu": delete[1]}


def bare(api: client.ApiClient, names: list[str], concurrency: int) -> Times:
    pm, cfg = api.rest_client.pool_manager, api.configuration
    headers = {"Content-Type": "application/json", "Accept": "application/json", **auth(cfg)}
    claims = f"{cfg.host}/api/v1/namespaces/{NS}/persistentvolumeclaims"
    bodies = {n: json.dumps(body(n)).encode() for n in names}

    def ok(resp: Any) -> None:
        if resp.status >= 300:
            raise SystemExit(f"bare: {resp.status} {resp.data[:200]!r}")

    return verbs(each(concurrency, names, lambda n: ok(pm.request("POST", claims, body=bodies[n], headers=headers))),
                 each(concurrency, names, lambda n: ok(pm.request("DELETE", f"{claims}/{n}", headers=headers))))


def through_client(api: client.ApiClient, names: list[str], concurrency: int) -> Times:
    kube = Kube(api)
    core = kube.core
    return verbs(each(concurrency, names, lambda n: kube.call("create", core.create_namespaced_persistent_volume_claim,
                                                              NS, body(n))),
                 each(concurrency, names, lambda n: kube.call("delete", core.delete_namespaced_persistent_volume_claim,
                                                              n, NS)))


def harness(settings: Any, rep: int, count: int, concurrency: int) -> Times:
    params = templates.get("volume-churn").validate({"count": count, "concurrency": concurrency}).model_dump()
    run = events.RunSpec(run_id=f"bench-lat-{rep}-{time.time_ns()}", campaign="bench", node=NODE, env="kubernetes",
                         test="volume-churn", params=params, timeout_s=600)
    cpu = time.process_time()
    tl = execute(run, settings)
    cpu = time.process_time() - cpu
    lines = [json.loads(line) for line in tl.jsonl().splitlines()]
    if lines[-1]["errors"] or lines[-1]["left_behind"]:
        raise SystemExit(f"harness: {lines[-1]}")
    ts = [line["t"] for line in lines if line["kind"] == "object"]
    return {"create": 1000 * statistics.median(t["api_accepted"] - t["request_sent"] for t in ts),
            "delete": 1000 * statistics.median(t["delete_accepted"] - t["delete_requested"] for t in ts),
            "cpu a claim": 1000 * cpu / count}


def measures(api: client.ApiClient, settings: Any, rep: int, count: int,
             concurrency: int) -> dict[str, Callable[[], Times]]:
    names = [f"lat-{rep}-{i:05d}" for i in range(count)]
    return {"bare": lambda: bare(api, [f"{n}-b" for n in names], concurrency),
            "client": lambda: through_client(api, [f"{n}-c" for n in names], concurrency),
            "harness": lambda: harness(settings, rep, count, concurrency)}


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--concurrency", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    figures: dict[str, list[Times]] = {}
    loads = [loadavg()]
    with tempfile.TemporaryDirectory(prefix="podtax-bench-cplat-") as tmp:
        procs, kubeconfig, _ = start_emulators(Path(tmp))
        try:
            settings = podtax_config.load(podtax_config.RunnerSettings, runner_kubeconfig=kubeconfig,
                                          runner_namespace=NS)
            api = kube_client(settings)
            bare(api, [f"warm-{i}" for i in range(args.concurrency * 3)], args.concurrency)  # kubesim's first ones
            for rep in range(args.reps):
                for what, measure in measures(api, settings, rep, args.count, args.concurrency).items():
                    before = server_time(api)
                    times = measure()
                    server = server_ms(before, server_time(api))
                    figures.setdefault(what, []).append(times)
                    figures.setdefault(f"{what} server", []).append(server)
                    print(f"  rep {rep + 1} {what:7s} " + "  ".join(f"{k} {v:.3f}" for k, v in times.items())
                          + "  server " + "  ".join(f"{k} {v:.3f}" for k, v in server.items()) + " (ms)", flush=True)
                loads.append(loadavg())
        finally:
            for p in procs:
                p.terminate()
                p.wait(timeout=10)
    med = {what: {k: statistics.median(f[k] for f in runs) for k in runs[0]} for what, runs in figures.items()}
    for verb in VERBS:
        b = med["bare"][verb]
        print(f"{verb}: harness {med['harness'][verb]:.2f} ms, client {med['client'][verb]:.2f} ms | anchor (bare "
              f"urllib3) {b:.2f} ms | ratio harness/bare {med['harness'][verb] / b:.2f}x, client/bare "
              f"{med['client'][verb] / b:.2f}x | kubesim's own time (mean) harness "
              f"{med['harness server'][verb]:.2f}, client {med['client server'][verb]:.2f}, bare "
              f"{med['bare server'][verb]:.2f} ms [median of {args.reps}, {args.count} claims, concurrency "
              f"{args.concurrency}]")
    print(f"client CPU per request (thread): client create {med['client']['create cpu']:.3f} ms, delete "
          f"{med['client']['delete cpu']:.3f} ms | bare create {med['bare']['create cpu']:.3f}, delete "
          f"{med['bare']['delete cpu']:.3f} ms | harness process CPU a claim (create, watch, delete) "
          f"{med['harness']['cpu a claim']:.3f} ms")
    print(" -> ".join(loads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
