"""Benchmark a SIGTERM -> exit of a process whose last single publish (Bus.publish, not pipelined) goes to a NATS
that hangs (nats-server paused with SIGSTOP): the process is a service in miniature (bus.stop_on_signals; on the
signal it publishes one event, as a handler finishing its report does, then closes its bus). Prints the median of
`--runs` runs of SIGTERM -> exit, the publish's own wait and what it ended with; asserts nothing. Real nats-server.

    .venv/bin/python bench/bench_stop_single_publish.py --runs 3
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from podtax.oneline_args import OneLineParser

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.paused

CHILD = r"""
import asyncio, sys, time
from podtax import events
from podtax.bus import Bus, stop_on_signals

async def main() -> None:
    bus = await Bus.connect(sys.argv[1], "bench/stop")
    await bus.ensure_streams()
    stop = stop_on_signals()
    print("ready", flush=True)
    await stop.wait()
    now, began = events.now(), time.monotonic()
    event = events.raw_log(events.RawLog(run=events.RunSpec(run_id="stop-1", campaign="stop", node="n1", env="host",
                           test="sysbench-cpu", params={}), stdout="x", exit_code=0, started_at=now, ended_at=now), "b")
    try:
        await bus.publish(event)
        ended = "published"
    except Exception as exc:
        ended = type(exc).__name__
    print(f"publish {time.monotonic() - began:.2f} {ended}", flush=True)
    await bus.close()

asyncio.run(main())
"""


def one(url: str, pid: int) -> tuple[float, str]:
    """SIGTERM -> exit of the child once NATS hangs, and its publish line."""
    from tests.paused import pause

    proc = subprocess.Popen([sys.executable, "-c", CHILD, url], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    pause(pid)
    try:
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out = proc.stdout.read()
        proc.wait(120)
        return time.monotonic() - began, out.strip()
    finally:
        os.kill(pid, signal.SIGCONT)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    from podtax import natsserver

    with tempfile.TemporaryDirectory() as tmp:
        server = natsserver.start(Path(tmp) / "js")
        try:
            results = [one(server.url, server.proc.pid) for _ in range(args.runs)]
        finally:
            server.stop()
    for seconds, line in results:
        print(f"SIGTERM -> exit {seconds:.2f} s ({line})")
    print(f"median SIGTERM -> exit {statistics.median(s for s, _ in results):.2f} s over {args.runs} runs; "
          f"load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
