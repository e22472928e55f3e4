"""Pipeline benchmark against its raw floor: raw logs -> parser -> analyzer -> DuckDB, real processes.

Each podtax run starts a real nats-server, the parser and the analyzer as separate processes,
publishes N raw logs (recorded sysbench output from tests/corpus) and waits until every result is
committed. Each floor run (bench/pipeline_floor.py) starts a fresh nats-server and pushes the same
raw-log payloads through the same topology with plain nats-py and DuckDB: a relay process that
answers each raw log with a result message of the real size, and a store process that inserts every
message as it arrived at the analyzer's batch size, then acks. The two alternate, three times each
(--repeats); printed: the medians of results/s and their ratio, the load average, CPU per result
of every process, publish -> commit latency, and the analyzer's peak and steady-state memory.

    python bench/bench_pipeline.py [--count 30000] [--repeats 3] [--quick]
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import nats
import pipeline_floor
from anchor import (
    interleave,
    line,
    loadavg,
    median,
    proc_cpu,
    proc_peak_rss_mb,
    proc_rss_mb,
    runs,
    thread_cpu,
)
from podtax import events, natsserver
from podtax.bus import Bus
from podtax.config import AnalyzerSettings, ParserSettings
from podtax.derive import derive
from podtax.oneline_args import OneLineParser
from podtax_analyzer import duckcon

REPO = Path(__file__).resolve().parents[1]
LOGS = ["sysbench-cpu-prime100000-1t.log", "sysbench-cpu-prime100000-2t.log", "sysbench-memory-write-1t.log"]
TESTS = {"sysbench-cpu-prime100000-1t.log": ("sysbench-cpu", {"threads": 1, "max_prime": 100000, "events": 200}),
         "sysbench-cpu-prime100000-2t.log": ("sysbench-cpu", {"threads": 2, "max_prime": 100000, "events": 400}),
         "sysbench-memory-write-1t.log": ("sysbench-memory", {"threads": 1, "operation": "write"})}
PARSER_BATCH = ParserSettings.model_fields["parser_batch"].default
ANALYZER_BATCH = AnalyzerSettings.model_fields["analyzer_batch"].default


def raw_logs(count: int, start: int = 0, chunk: int = 2000) -> list[list[events.Envelope]]:
    texts = {name: (REPO / "tests/corpus/debian12-x86_64" / name).read_text() for name in LOGS}
    batches = []
    for first in range(start, start + count, chunk):
        batch = []
        for i in range(first, min(start + count, first + chunk)):
            name = LOGS[i % len(LOGS)]
            test, params = TESTS[name]
            now = events.now()
            run = events.RunSpec(run_id=f"bench-{i}", campaign="bench", node=f"node-{i % 50}",
                                 env="host" if i % 2 else "kubernetes", test=test, params=params)
            batch.append(events.raw_log(events.RawLog(run=run, stdout=texts[name], exit_code=0, started_at=now,
                                                      ended_at=now), "bench"))
        batches.append(batch)
    return batches


def spawn(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


async def publish_podtax(url: str, batches: list[list[events.Envelope]]) -> None:
    bus = await Bus.connect(url, "bench")
    await bus.ensure_streams()
    for batch in batches:
        await bus.publish_many(batch)
    await bus.close()


async def publish_floor(url: str, batches: list[list[events.Envelope]]) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream(publish_async_max_pending=20_000)
    await pipeline_floor.ensure_stream(js)
    for batch in batches:
        futures = [await js.publish_async(f"{pipeline_floor.LOGS}.{i}", events.encode(e), headers={"Nats-Msg-Id": e.id})
                   for i, e in enumerate(batch)]
        for fut in futures:
            await fut
    await nc.close()


def cpu_line(cpu: dict[str, float], count: int) -> str:
    return ", ".join(f"{name} {seconds * 1e6 / count:,.0f}" for name, seconds in cpu.items())


def podtax_run(count: int, parsers: int, out: dict[str, Any], profile: Path | None = None,
               profiled: str = "analyzer") -> float:
    """One podtax pipeline run; returns results/s from the first publish to the last commit."""
    batches = raw_logs(count)
    with tempfile.TemporaryDirectory(prefix="podtax-bench-") as tmp:
        tmpd = Path(tmp)
        nats_srv = natsserver.start(tmpd / "js", log_file=tmpd / "nats.log")
        port = natsserver.free_port()
        db = tmpd / "bench.duckdb"
        env = {**os.environ, "PODTAX_NATS_URL": nats_srv.url, "PODTAX_ANALYZER_DB": str(db),
               "PODTAX_ANALYZER_PORT": str(port), "PODTAX_LOG_LEVEL": "WARNING"}
        prof = {profiled: ["-m", "cProfile", "-o", str(profile)]} if profile else {}
        analyzer = spawn([sys.executable, *prof.get("analyzer", []), "-m", "podtax_analyzer"], env,
                         tmpd / "analyzer.log")
        procs = [analyzer] + [spawn([sys.executable, *prof.get("parser", []), "-m", "podtax_parser"], env,
                                    tmpd / f"parser-{i}.log") for i in range(parsers)]
        rss: list[tuple[int, float]] = []
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            cpu0 = {p.pid: proc_cpu(p.pid) for p in [*procs, nats_srv.proc]}
            me0 = time.process_time()
            t0 = time.perf_counter()
            asyncio.run(publish_podtax(nats_srv.url, batches))
            stored = 0
            while stored < count:
                time.sleep(0.2)
                stored = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).json()["runs"]
                rss.append((stored, proc_rss_mb(analyzer.pid)))
                if time.perf_counter() - t0 > 1800:
                    raise SystemExit(f"gave up: {stored} of {count} committed after 30 min")
            total_s = time.perf_counter() - t0
            cpu = {"publisher": time.process_time() - me0,
                   "parser": sum(proc_cpu(p.pid) - cpu0[p.pid] for p in procs[1:]),
                   "analyzer": proc_cpu(analyzer.pid) - cpu0[analyzer.pid],
                   "nats-server": proc_cpu(nats_srv.proc.pid) - cpu0[nats_srv.proc.pid]}
            peak = proc_peak_rss_mb(analyzer.pid)
            out.setdefault("threads", []).append(thread_cpu(analyzer.pid))
        finally:
            stop(procs)
            nats_srv.stop()
        con = duckcon.connect(db, read_only=True)
        p50, p99, n, distinct = con.execute(
            """SELECT quantile_cont(epoch(stored_at) - epoch(ended_at), 0.5),
                      quantile_cont(epoch(stored_at) - epoch(ended_at), 0.99), count(*), count(DISTINCT run_id)
               FROM runs""").fetchone()
        con.close()
    if n != count or distinct != count:
        raise SystemExit(f"expected {count} distinct runs, found {n} rows and {distinct} run ids")
    quarters = [next((mb for done, mb in rss if done >= count * q / 4), rss[-1][1]) for q in (1, 2, 3, 4)]
    out.setdefault("latency", []).append((p50, p99))
    out.setdefault("cpu", []).append(cpu)
    out.setdefault("peak", []).append(peak)
    out.setdefault("quarters", []).append(quarters)
    return count / total_s


def floor_run(count: int, payload: bytes, out: dict[str, Any]) -> float:
    """One run of the raw floor (same topology, plain nats-py and DuckDB); returns results/s."""
    batches = raw_logs(count)
    with tempfile.TemporaryDirectory(prefix="podtax-bench-floor-") as tmp:
        tmpd = Path(tmp)
        nats_srv = natsserver.start(tmpd / "js", log_file=tmpd / "nats.log")
        (tmpd / "result.json").write_bytes(payload)
        floor = [sys.executable, str(Path(__file__).with_name("pipeline_floor.py"))]
        store = spawn([*floor, "store", nats_srv.url, str(tmpd / "floor.duckdb"), "--batch", str(ANALYZER_BATCH),
                       "--count", str(count)], dict(os.environ), tmpd / "store.log")
        relay = spawn([*floor, "relay", nats_srv.url, str(tmpd / "result.json"), "--batch", str(PARSER_BATCH)],
                      dict(os.environ), tmpd / "relay.log")
        try:
            time.sleep(1.0)  # both have subscribed (they create the stream and their consumers)
            cpu0 = {p.pid: proc_cpu(p.pid) for p in (store, relay, nats_srv.proc)}
            me0 = time.process_time()
            t0 = time.perf_counter()
            asyncio.run(publish_floor(nats_srv.url, batches))
            while store.poll() is None:
                time.sleep(0.05)
                cpu = {"publisher": time.process_time() - me0, "relay": proc_cpu(relay.pid) - cpu0[relay.pid],
                       "store": proc_cpu(store.pid) - cpu0[store.pid],
                       "nats-server": proc_cpu(nats_srv.proc.pid) - cpu0[nats_srv.proc.pid]}
                if time.perf_counter() - t0 > 900:
                    raise SystemExit("the floor did not finish in 15 min")
            total_s = time.perf_counter() - t0
            if store.returncode != 0:
                raise SystemExit(f"the floor's store failed: {(tmpd / 'store.log').read_text()[-2000:]}")
        finally:
            stop([relay, store])
            nats_srv.stop()
    out.setdefault("cpu", []).append(cpu)
    return count / total_s


def result_payload() -> bytes:
    """The largest real result event of the logs published (the floor relays this for every log)."""
    sample = [batch[0] for batch in raw_logs(len(LOGS), chunk=1)]
    return max((events.encode(derive(e.data)) for e in sample), key=len)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=30_000, help="raw logs per run (100000 for the memory target)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--parsers", type=int, default=1,
                    help="parser processes on the same durable consumer (a second one measured no faster on "
                         "2 cores: the CPU is already saturated)")
    ap.add_argument("--quick", action="store_true", help="10,000 raw logs per run")
    ap.add_argument("--profile", type=Path, metavar="FILE",
                    help="run podtax once with one service under cProfile (--profiled); its stats go to FILE")
    ap.add_argument("--profiled", choices=["analyzer", "parser"], default="analyzer")
    args = ap.parse_args(argv)
    if args.quick:
        args.count = 10_000
    if args.profile:
        out: dict[str, Any] = {}
        rate = podtax_run(args.count, args.parsers, out, args.profile.resolve(), args.profiled)
        print(f"{rate:,.0f} results/s with the {args.profiled} under cProfile; CPU per result, us: "
              f"{cpu_line(out['cpu'][0], args.count)}; analyzer threads (s): {out['threads'][0]}")
        return 0
    payload = result_payload()
    ours: dict[str, Any] = {}
    floor: dict[str, Any] = {}
    figures = interleave({"podtax": lambda: podtax_run(args.count, args.parsers, ours),
                          "floor": lambda: floor_run(args.count, payload, floor)}, args.repeats)
    load = loadavg()
    print(line(f"pipeline, raw log -> stored result ({args.count:,} per run)", median(figures["podtax"]),
               "results/s", "raw nats-py + DuckDB floor, same topology", median(figures["floor"]), load))
    print(f"  podtax {runs(figures['podtax'])}, floor {runs(figures['floor'])}; "
          "targets >= 5,000 results/s and >= 0.8x the floor")
    mid = len(ours["cpu"]) // 2
    print(f"  CPU per result, microseconds (run {mid + 1}): podtax {cpu_line(ours['cpu'][mid], args.count)}; "
          f"floor {cpu_line(floor['cpu'][mid], args.count)}")
    threads = ours["threads"][mid].items()
    print("  analyzer CPU (whole process life, s): " + ", ".join(f"{n} {s:.1f}" for n, s in threads))
    p50, p99 = sorted(ours["latency"])[mid]
    print(f"  publish -> commit latency (median run): p50 {p50 * 1000:,.0f} ms, p99 {p99 * 1000:,.0f} ms")
    quarters = ", ".join(f"{mb:.0f}" for mb in ours["quarters"][mid])
    print(f"  analyzer memory: peak {median(ours['peak']):.0f} MB (median of runs {runs(ours['peak'])}); "
          f"RSS at 25/50/75/100% of the results: {quarters} MB (target < 300 MB peak at 100,000, flat)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
