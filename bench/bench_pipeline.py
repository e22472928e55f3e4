"""Pipeline benchmark: raw logs -> parser -> analyzer -> DuckDB, with real processes.

Starts a real nats-server, the parser and the analyzer as separate processes, publishes N raw
logs (recorded sysbench output from tests/corpus), waits until every result is committed, then
prints results committed per second and the p50/p99 latency from publish to commit.

    python bench/bench_pipeline.py [--count 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import httpx
from podtax import events, natsserver
from podtax.bus import Bus

REPO = Path(__file__).resolve().parents[1]
LOGS = ["sysbench-cpu-prime100000-1t.log", "sysbench-cpu-prime100000-2t.log", "sysbench-memory-write-1t.log"]
TESTS = {"sysbench-cpu-prime100000-1t.log": ("sysbench-cpu", {"threads": 1, "max_prime": 100000, "events": 200}),
         "sysbench-cpu-prime100000-2t.log": ("sysbench-cpu", {"threads": 2, "max_prime": 100000, "events": 400}),
         "sysbench-memory-write-1t.log": ("sysbench-memory", {"threads": 1, "operation": "write"})}


def spawn(module: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", module], env=env, stdout=out, stderr=subprocess.STDOUT)


async def publish(url: str, count: int, chunk: int = 2000) -> float:
    texts = {name: (REPO / "tests/corpus/debian12-x86_64" / name).read_text() for name in LOGS}
    bus = await Bus.connect(url, "bench")
    await bus.ensure_streams()
    t0 = time.perf_counter()
    for start in range(0, count, chunk):
        batch = []
        for i in range(start, min(count, start + chunk)):
            name = LOGS[i % len(LOGS)]
            test, params = TESTS[name]
            now = events.now()
            run = events.RunSpec(run_id=f"bench-{i}", campaign="bench", node=f"node-{i % 50}",
                                 env="host" if i % 2 else "kubernetes", test=test, params=params)
            batch.append(events.raw_log(events.RawLog(run=run, stdout=texts[name], exit_code=0, started_at=now,
                                                      ended_at=now), "bench"))
        await bus.publish_many(batch)
    elapsed = time.perf_counter() - t0
    await bus.close()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--parsers", type=int, default=1,
                    help="parser processes on the same durable consumer (a second one measured no faster on "
                         "2 cores: the CPU is already saturated)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="podtax-bench-") as tmp:
        tmpd = Path(tmp)
        nats = natsserver.start(tmpd / "js", log_file=tmpd / "nats.log")
        port = natsserver.free_port()
        db = tmpd / "bench.duckdb"
        env = {**os.environ, "PODTAX_NATS_URL": nats.url, "PODTAX_ANALYZER_DB": str(db),
               "PODTAX_ANALYZER_PORT": str(port), "PODTAX_LOG_LEVEL": "WARNING"}
        procs = [spawn("podtax_analyzer", env, tmpd / "analyzer.log")]
        procs += [spawn("podtax_parser", env, tmpd / f"parser-{i}.log") for i in range(args.parsers)]
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            t0 = time.perf_counter()
            pub_s = asyncio.run(publish(nats.url, args.count))
            print(f"published {args.count:,} raw logs in {pub_s:.1f} s ({args.count / pub_s:,.0f}/s)")
            stored = 0
            while stored < args.count:
                time.sleep(0.5)
                stored = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).json()["runs"]
                if time.perf_counter() - t0 > 1800:
                    print(f"gave up: {stored} of {args.count} committed after 30 min")
                    return 1
            total_s = time.perf_counter() - t0
        finally:
            for p in procs:
                p.terminate()
                p.wait(30)
            nats.stop()
        con = duckdb.connect(str(db), read_only=True)
        p50, p99, n, distinct = con.execute(
            """SELECT quantile_cont(epoch(stored_at) - epoch(ended_at), 0.5),
                      quantile_cont(epoch(stored_at) - epoch(ended_at), 0.99), count(*), count(DISTINCT run_id)
               FROM runs""").fetchone()
        ok = con.execute("SELECT count(*) FROM runs WHERE status = 'ok'").fetchone()[0]
        print(f"committed {n:,} results ({ok:,} ok, {distinct:,} distinct run ids) in {total_s:.1f} s "
              f"from the first publish: {n / total_s:,.0f} results/s")
        print(f"publish -> commit latency: p50 {p50 * 1000:,.0f} ms, p99 {p99 * 1000:,.0f} ms "
              f"(target: >= 5,000 results/s on 2 cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
