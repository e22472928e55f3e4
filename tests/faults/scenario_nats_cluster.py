"""Fault scenario "NATS cluster": three nats-servers clustered on loopback, streams and KV replicated
three ways (PODTAX_NATS_REPLICAS=3); a SIMULATED campaign runs; one server is SIGKILLed at 30% of the
runs and restarted at 60%. Expected: every planned run ends as exactly one result or one recorded
failure; none twice, none lost; the stream and the runner's bucket have three replicas.

For the `make faults` suite: ``run(nodes, reps) -> dict(planned, results, failures, duplicates, lost)``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import nats
from podtax import subjects

from tests.faults.cluster import NatsCluster
from tests.faults.drill import campaign_drill, finished_runs, header, wait_header


async def replicas(url: str) -> dict[str, int]:
    nc = await nats.connect(servers=url.split(","))
    try:
        js = nc.jetstream()
        out = {}
        for name in (subjects.STREAM, f"KV_{subjects.RUNNER_BUCKET}"):
            info = await js.stream_info(name)
            out[name] = info.config.num_replicas
        return out
    finally:
        await nc.close()


async def scenario(tmp: Path, nodes: int = 20, reps: int = 25, victim: int = 1,
                   spacing: str = "back-to-back") -> dict[str, Any]:
    cluster = NatsCluster(tmp / "cluster")
    cluster.start()
    os.environ["PODTAX_NATS_REPLICAS"] = "3"  # the runner child and this process's Bus
    try:
        await cluster.wait_ready()
        events: dict[str, Any] = {}

        async def during(bus: Any, name: str, total: int) -> None:
            await wait_header(bus, name, lambda h: finished_runs(h) >= 0.3 * total, 300, "30% of the runs")
            cluster.kill(victim)
            events["killed_at_runs"] = finished_runs(await header(bus, name))
            await wait_header(bus, name, lambda h: finished_runs(h) >= 0.6 * total, 300,
                              "60% of the runs with one server down")
            cluster.start(victim)
            events["restarted_at_runs"] = finished_runs(await header(bus, name))

        out = await campaign_drill(cluster.url, tmp, nodes=nodes, reps=reps, combos=2, name="cluster", spacing=spacing,
                                   kill_runner_at=None, during=during, timeout=600,
                                   before_tally=lambda: cluster.wait_in_sync(
                                       [subjects.STREAM, f"KV_{subjects.RUNNER_BUCKET}"]))
        out.update(events)
        out["replicas"] = await replicas(cluster.url)
        return out
    finally:
        os.environ.pop("PODTAX_NATS_REPLICAS", None)
        cluster.stop()


def run(nodes: int = 20, reps: int = 25) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="podtax-fault-") as tmp:
        return asyncio.run(scenario(Path(tmp), nodes, reps))


if __name__ == "__main__":
    print(run(*map(int, sys.argv[1:3])))
