"""Injected controller latencies of the SIMULATED Nomad API: deletes serialized per plugin, creates
not, and the latency distribution of the cluster file observed (order/overlap checks, no speed
assertions)."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable

import httpx
from podtax_nomadsim.state import ControllerCall
from podtax_nomadsim.testing import Sim

CAPS = [{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}]


def body(vol_id: str, plugin: str) -> dict:
    return {"Volumes": [{"ID": vol_id, "PluginID": plugin, "RequestedCapabilities": CAPS}]}


async def churn(url: str, ids: list[str], plugin_of: Callable[[str], str], op: str,
                limit: int = 50) -> dict[str, tuple[int, float]]:
    """Create or delete the volumes concurrently; returns id -> (status, client-measured seconds)."""
    sem = asyncio.Semaphore(limit)
    limits = httpx.Limits(max_connections=limit)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        async def one(vol_id: str) -> tuple[str, tuple[int, float]]:
            async with sem:
                t0 = time.monotonic()
                if op == "create":
                    r = await client.put(f"/v1/volume/csi/{vol_id}/create", json=body(vol_id, plugin_of(vol_id)))
                else:
                    r = await client.delete(f"/v1/volume/csi/{vol_id}/delete")
                return vol_id, (r.status_code, time.monotonic() - t0)

        return dict(await asyncio.gather(*(one(i) for i in ids)))


def max_overlap(calls: list[ControllerCall]) -> int:
    edges = sorted([(c.start, 1) for c in calls] + [(c.end, -1) for c in calls], key=lambda e: (e[0], e[1]))
    depth = best = 0
    for _, step in edges:
        depth += step
        best = max(best, depth)
    return best


def test_deletes_serialized_per_plugin_creates_not(nomadsim_factory: Callable[..., Sim]) -> None:
    plugin = {"createLatency": 0.3, "deleteLatency": 0.1}
    sim = nomadsim_factory({"plugins": [{"id": "a", **plugin}, {"id": "b", **plugin}]})
    ids = [f"{p}-{i}" for p in "ab" for i in range(4)]
    created = asyncio.run(churn(sim.url, ids, lambda v: v[0], "create"))
    assert {status for status, _ in created.values()} == {200}
    deleted = asyncio.run(churn(sim.url, ids, lambda v: v[0], "delete"))
    assert {status for status, _ in deleted.values()} == {200}
    calls = sim.controller_calls()
    creates = [c for c in calls if c.op == "create"]
    assert max_overlap(creates) > 1  # 8 concurrent creates of 0.3 s run side by side
    for name in "ab":
        deletes = sorted((c for c in calls if c.op == "delete" and c.plugin == name), key=lambda c: c.start)
        assert len(deletes) == 4
        assert max_overlap(deletes) == 1  # one controller RPC per plugin at a time
        assert all(later.start >= earlier.end for earlier, later in zip(deletes, deletes[1:], strict=False))
    # two plugins' delete queues are independent
    assert max_overlap([c for c in calls if c.op == "delete"]) == 2
    # a client waits for its own controller call, and the last of 4 serialized deletes for all 4
    assert max(seconds for _, seconds in deleted.values()) >= 4 * 0.1


def test_injected_latency_distribution_observed(nomadsim_factory: Callable[..., Sim]) -> None:
    median, sigma = 0.02, 0.5
    sim = nomadsim_factory({"seed": 7, "plugins": [{"id": "p", "createLatency": {
        "distribution": "lognormal", "median": median, "sigma": sigma}}]})
    ids = [f"v{i:03d}" for i in range(120)]
    created = asyncio.run(churn(sim.url, ids, lambda _: "p", "create", limit=30))
    assert {status for status, _ in created.values()} == {200}
    calls = {c.volume: c for c in sim.controller_calls()}
    injected = [c.latency for c in calls.values()]
    assert len(injected) == 120
    # the median of 120 lognormal draws is within ~±15 % of the true median (1.25 * sigma / sqrt(n) in log
    # space, 3 standard errors); the spread shows it is a distribution, not a constant
    assert abs(statistics.median(injected) / median - 1) < 0.2
    assert max(injected) / min(injected) > 2
    # every client saw at least the latency injected for its own volume
    assert all(created[v][1] >= calls[v].latency for v in ids)
    assert all(c.end - c.start >= c.latency for c in calls.values())
