"""The runner's state at 100,000 runs: plan, save every document to KV, resume (load) after a restart,
and what a restarted runner keeps in memory of the campaign while it runs and once it has finished
(a finished campaign is known by name only; before, each of its runs stayed in memory, ~2 KB a run).

Anchor, measured in the same run against the same nats-server: a pipelined JetStream publish of as
many messages of the same sizes (what any save must at least cost). Prints medians of --repeat runs,
the load average, and each figure's ratio to the anchor.

    .venv/bin/python bench/bench_runner_state.py [--repeat 3]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from nats.js.api import StreamConfig
from podtax import campaign, config, events, natsserver, subjects
from podtax.bus import Bus
from podtax.oneline_args import OneLineParser
from podtax_runner.service import Runner
from podtax_runner.state import CampaignState


def big(name: str) -> campaign.Campaign:
    return campaign.Campaign.model_validate({
        "name": name, "nodes": [f"n{i:03d}" for i in range(100)], "environments": ["host", "kubernetes"],
        "tests": [{"test": "sysbench-cpu", "params": {"threads": 1}, "matrix": {"max_prime": [1000, 2000]}}],
        "repetitions": {"min": 250, "max": 250}, "timeout": 30, "seed": 1})


async def traced_load(settings: config.RunnerSettings, bus: Bus, kv: object) -> tuple[Runner, float]:
    """A restarted runner's load, and the MB of Python memory it still holds afterwards."""
    tracemalloc.start()
    try:
        fresh = Runner(settings, bus, kv, None)
        await fresh.load()
        return fresh, tracemalloc.get_traced_memory()[0] / 1e6
    finally:
        tracemalloc.stop()


def finish(state: CampaignState) -> None:
    now = events.now()
    for rid, run in state.runs.items():
        if run.status == "planned":
            state.dispatched(rid, now)
            state.outcome(rid, True, now)


async def once(url: str, i: int) -> dict[str, float]:
    bus = await Bus.connect(url, "bench")
    await bus.ensure_streams()
    kv = await bus.kv(subjects.RUNNER_BUCKET)
    settings = config.load(config.RunnerSettings, nats_url=url, runner_kubernetes=False)
    out: dict[str, float] = {}
    c = big(f"bench{i}")
    t = time.perf_counter()
    state = CampaignState.new(c, dict.fromkeys(c.nodes, 4), "local", 1, events.now())
    out["plan_s"] = time.perf_counter() - t
    docs = state.dirty_documents()
    t = time.perf_counter()
    await Runner(settings, bus, kv, None).save(state)
    out["save_s"] = time.perf_counter() - t
    t = time.perf_counter()
    fresh = Runner(settings, bus, kv, None)
    await fresh.load()
    out["load_s"] = time.perf_counter() - t
    assert len(fresh.campaigns[c.name].runs) == 100_000
    del fresh
    loaded, out["held_active_mb"] = await traced_load(settings, bus, kv)
    state = loaded.campaigns[c.name]
    finish(state)
    await loaded.save(state)
    del loaded, state
    t = time.perf_counter()
    done, out["held_finished_mb"] = await traced_load(settings, bus, kv)
    out["load_finished_s"] = time.perf_counter() - t
    assert done.finished == {c.name} and not done.campaigns
    await bus.js.add_stream(StreamConfig(name=f"BENCH{i}", subjects=[f"bench{i}.>"]))
    t = time.perf_counter()
    futures = [await bus.js.publish_async(f"bench{i}.{n}", value) for n, (_, value) in enumerate(docs)]
    for fut in futures:
        await fut
    out["anchor_s"] = time.perf_counter() - t
    out["max_doc_bytes"] = max(len(v) for _, v in docs)
    await bus.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    runs = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:  # a fresh server each time: the load reads one campaign
            server = natsserver.start(Path(tmp) / "js")
            try:
                runs.append(asyncio.run(once(server.url, i)))
            finally:
                server.stop()
        print(f"run {i + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[-1].items()), flush=True)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(f"100,000-run campaign, median of {args.repeat} (load average {os.getloadavg()[0]:.2f}):")
    print(f"  anchor: pipelined publish of the same 100,001 messages: {med['anchor_s']:.2f} s")
    for k in ("plan_s", "save_s", "load_s"):
        print(f"  {k:7} {med[k]:6.2f} s   ratio to anchor {med[k] / med['anchor_s']:.2f}")
    print(f"  largest document {int(med['max_doc_bytes']):,} bytes (NATS max_payload 1,048,576)")
    print(f"  memory a restarted runner holds of it: finished {med['held_finished_mb']:.2f} MB (loaded in "
          f"{med['load_finished_s']:.2f} s) | anchor (the same campaign while it runs: every run) "
          f"{med['held_active_mb']:.1f} MB | ratio {med['held_finished_mb'] / med['held_active_mb']:.4f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
