"""Control-plane timelines: parse and store cost per object, against the anchor of plain json.loads.

Run as `python bench/bench_timeline.py [objects]` (default 10,000, the template's maximum count).
Prints figures only (no assertions): for a volume-churn timeline on Kubernetes, the median of 3 runs
of (a) the anchor, json.loads of every line, (b) the parser (podtax.parsers.timeline: validation,
percentiles, makespans) and (c) the analyzer's phases rows for the same raw log inserted into a real
DuckDB file, each with its ratio to the anchor and the load average.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from podtax import events
from podtax.oneline_args import OneLineParser
from podtax.parsers import parse_run

KEYS = ("request_sent", "api_accepted", "pv_created", "bound", "delete_requested", "gone", "pv_gone")


def timeline(count: int, seed: int = 1) -> str:
    rng = np.random.default_rng(seed)
    lines = [json.dumps({"kind": "header", "template": "volume-churn", "backend": "kubernetes", "format": 1,
                         "params": {"count": count}, "t0_unix": 1764554400.0, "observe": "watch", "simulated": True})]
    steps = rng.lognormal(np.log(0.05), 0.3, size=(count, len(KEYS))).cumsum(axis=1)
    for i in range(count):
        t = dict(zip(KEYS, (round(float(x), 6) for x in steps[i]), strict=True))
        lines.append(json.dumps({"kind": "object", "name": f"podtax-vc-bench-{i:05d}", "t": t,
                                 "server": {"created": "2026-12-01T02:00:00Z"}, "error": None}))
    lines.append(json.dumps({"kind": "summary", "requests": {"create": count, "delete": count, "watch": 2},
                             "apiserver": None, "errors": 0, "left_behind": 0, "wall_s": 9.0}))
    return "\n".join(lines) + "\n"


def median_of_3(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("objects", nargs="?", type=int, default=10_000, help="objects in the timeline (default 10,000)")
    count = ap.parse_args(argv).objects
    if count < 1:
        ap.error(f"objects: {count}: give a count of 1 or more")
    text = timeline(count)
    run = events.RunSpec(run_id="bench", campaign="bench", node="n", env="kubernetes", test="volume-churn",
                         params={"count": count})
    now = datetime.now(UTC)
    raw = events.raw_log(events.RawLog(run=run, stdout=text, exit_code=0, started_at=now, ended_at=now), "bench")

    def anchor() -> object:
        return [json.loads(line) for line in text.splitlines()]

    def parse() -> object:
        return parse_run("volume-churn", text, requested={"count": count})

    from podtax_analyzer.store import Store

    store_db = Store(Path(tempfile.mkdtemp()) / "bench.duckdb")
    raws = iter([raw.model_copy(update={"id": f"bench-{i}", "data": raw.data.model_copy(update={
        "run": run.model_copy(update={"run_id": f"bench-{i}"})})}) for i in range(3)])

    def store() -> object:  # a new run each time (the same one would be a no-op redelivery)
        return store_db.write_batch([next(raws)])

    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"] * 3
    a, p, st = median_of_3(anchor), median_of_3(parse), median_of_3(store)
    store_db.close()
    print(f"volume-churn timeline, {count} objects ({len(text) / 1e6:.1f} MB), load average {' '.join(load)}")
    print(f"  anchor json.loads of every line : {a * 1000:8.1f} ms  ({count / a:10,.0f} objects/s)")
    print(f"  parser (metrics of the run)     : {p * 1000:8.1f} ms  ({count / p:10,.0f} objects/s)  "
          f"x{p / a:.2f} the anchor")
    print(f"  analyzer store (raw log + phases): {st * 1000:8.1f} ms  ({count / st:10,.0f} objects/s)  "
          f"x{st / a:.2f} the anchor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
