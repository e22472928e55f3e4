"""A 100,000-run SIMULATED campaign end to end through a real runner process (plan, dispatch one run at a
time per node on 100 nodes, outcomes back over JetStream), no faults, median of --repeat runs.

Anchor, measured in the same run against the same nats-server: a pipelined JetStream publish of
100,000 synthetic results (the messages the campaign itself produces once each).

    .venv/bin/python bench/bench_simulated_campaign.py [--repeat 3]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from podtax import events, natsserver
from podtax.bus import Bus
from podtax_runner import simulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from podtax.oneline_args import OneLineParser

from tests.faults.drill import campaign_drill  # noqa: E402


async def anchor(url: str, n: int = 100_000) -> float:
    bus = await Bus.connect(url, "bench")
    await bus.ensure_streams()
    run = events.RunSpec(run_id="anchor", campaign="anchor", node="n", env="host", test="sysbench-cpu",
                         params={"threads": 1, "max_prime": 1000})
    msgs = [simulate.result(run.model_copy(update={"run_id": f"anchor-{i}"})) for i in range(n)]
    t = time.perf_counter()
    for i in range(0, n, 10_000):
        await bus.publish_many(msgs[i:i + 10_000])
    took = time.perf_counter() - t
    await bus.close()
    return took


def once(i: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        server = natsserver.start(Path(tmp) / "js")
        try:
            out = asyncio.run(campaign_drill(server.url, Path(tmp), nodes=100, reps=250, combos=2, name=f"b{i}",
                                             kill_runner_at=None, timeout=900))
            if out["lost"]:
                raise SystemExit(f"run {i + 1}: {out['lost']} run(s) LOST (planned, never ended): {out}")
            if out["duplicates"] or out["failures"] or out["planned"] != 100_000:
                # a runner that falls behind its outcomes past the report grace fails in-flight runs as
                # no-report, retries them, and then meets their late results: said, not hidden
                print(f"WARNING run {i + 1}: {out['failures']} failure(s), {out['duplicates']} duplicate "
                      f"outcome(s), {out['planned']:,} planned (100,000 without retries): {out}", flush=True)
            return {"campaign_s": out["finished_s"], "planned_s": out["planned_s"],
                    "anchor_s": asyncio.run(anchor(server.url))}
        finally:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    runs = []
    for i in range(args.repeat):
        runs.append(once(i))
        print(f"run {i + 1}: campaign {runs[-1]['campaign_s']:.1f} s (planned after {runs[-1]['planned_s']:.1f} s), "
              f"anchor {runs[-1]['anchor_s']:.1f} s "
              f"(load average {os.getloadavg()[0]:.2f})", flush=True)
    c, p, a = (statistics.median(r[k] for r in runs) for k in ("campaign_s", "planned_s", "anchor_s"))
    print(f"100,000-run simulated campaign, median of {args.repeat} (load average {os.getloadavg()[0]:.2f}): "
          f"{c:.1f} s submit to finished ({100_000 / c:,.0f} runs/s; planned and saved after {p:.1f} s); "
          f"anchor (publish 100,000 results) {a:.1f} s; ratio {c / a:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
