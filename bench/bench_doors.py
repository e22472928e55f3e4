"""Cost of the closed doors (issue 12, items 5 and 7), each against its open anchor in the same run:

- NATS: events published per second (pipelined, JetStream-acked) by a service user whose subject
  permissions nats-server checks, against an anonymous client of a server without users.
- Kubernetes emulator: pods created per second with the real kubernetes client over HTTPS with the
  bearer token, against plain HTTP without authentication (simulated kubelet, both).

Median of 3 runs each, with the load average.

    python bench/bench_doors.py [--events 20000] [--pods 300]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from podtax import config, events, localauth, natsauth, natsserver
from podtax.bus import Bus
from podtax.config import Common
from podtax.oneline_args import OneLineParser


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def publish_rate(url: str, auth: dict, count: int) -> float:
    bus = await Bus.connect(url, "bench/doors", auth=auth)
    await bus.ensure_streams(-1, 0)
    now, round_tag = events.now(), uuid.uuid4().hex[:8]  # new run ids each round: none is a duplicate
    batch = [events.raw_log(events.RawLog(
        run=events.RunSpec(run_id=f"r{round_tag}-{i}", campaign="bench", node="n", env="host", test="sysbench-cpu",
                           params={"threads": 1}), stdout="x" * 200, exit_code=0, started_at=now, ended_at=now),
        "bench") for i in range(count)]
    t0 = time.perf_counter()
    for start in range(0, count, 2000):
        await bus.publish_many(batch[start:start + 2000])
    rate = count / (time.perf_counter() - t0)
    await bus.close()  # no purge: no service user may purge a stream (stop 31), and the rounds' ids differ
    return rate


def nats_figures(count: int) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory(prefix="bench-doors-") as tmp:
        users, conf = localauth.nats_users(Path(tmp), "bench-node")
        plain = natsserver.start(Path(tmp) / "plain")
        secured = natsserver.start(Path(tmp) / "secured", config=conf)
        try:
            settings = config.load(Common, nats_url=secured.url, nats_user="runner", nats_password=users["runner"])
            auth = natsauth.connect_options(settings)
            anchor, closed = [], []
            for _ in range(3):
                anchor.append(asyncio.run(publish_rate(plain.url, {}, count)))
                closed.append(asyncio.run(publish_rate(secured.url, auth, count)))
            return anchor, closed
        finally:
            plain.stop()
            secured.stop()


def create_rate(sim, count: int) -> float:  # type: ignore[no-untyped-def]
    from kubernetes import client

    api = client.CoreV1Api(sim.api_client())
    t0 = time.perf_counter()
    for i in range(count):
        resp = api.create_namespaced_pod("default", {"metadata": {"name": f"p{i}"}, "spec": {
            "containers": [{"name": "c", "image": "i"}]}}, _preload_content=False)
        resp.read()  # the body, so the keep-alive connection goes back to the pool
    rate = count / (time.perf_counter() - t0)
    api.delete_collection_namespaced_pod("default", grace_period_seconds=0)
    return rate


def kubesim_figures(count: int) -> tuple[list[float], list[float]]:
    from podtax_kubesim.testing import start

    anchor, closed = [], []
    with start(kubelet="none", token="") as plain, start(kubelet="none") as secured:
        for _ in range(3):
            anchor.append(create_rate(plain, count))
            closed.append(create_rate(secured, count))
    return anchor, closed


def report(what: str, unit: str, anchor: list[float], closed: list[float]) -> None:
    a, c = statistics.median(anchor), statistics.median(closed)
    print(f"{what}: open {a:,.0f} {unit}, closed {c:,.0f} {unit} (median of 3), ratio closed/open x{c / a:.2f}")


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=20_000)
    p.add_argument("--pods", type=int, default=300)
    args = p.parse_args(argv)
    print(f"load average before: {loadavg()}")
    report("NATS publish (service user + permissions vs anonymous)", "events/s", *nats_figures(args.events))
    report("kubesim pod create (HTTPS + token vs plain HTTP)", "pods/s", *kubesim_figures(args.pods))
    print(f"load average after: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
