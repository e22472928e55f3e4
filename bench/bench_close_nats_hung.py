"""Benchmark closing a nats-py connection whose nats-server hangs (paused with SIGSTOP), as Bus.close does at a
service's stop: natsclose.drain_within (a PING first, then the drain, DRAIN_S in all) beside its anchor, nats-py's
own drain() (the close before natsclose: drain_timeout 5 s, then its flush's 10 s), and drain_within of a server
that answers the PING and is paused before the drain (nats-py's whole drain before natsclose bounded it too). Prints
each run and the medians; asserts nothing. Real nats-server, one connection a case with a subscription
(drain_timeout 5 s, as Bus.connect).

    .venv/bin/python bench/bench_close_nats_hung.py --runs 3
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from podtax.oneline_args import OneLineParser

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.paused

CASES = ("drain_within, hung", "nats-py drain, hung (anchor)", "drain_within, hung after the PING")


async def one(url: str, pid: int, case: str) -> float:
    """Seconds to close a connection to the server `pid` paused, by `case`; the server resumed after."""
    import nats
    from podtax.natsclose import drain_within

    from tests.paused import pause

    async def cb(_msg: object) -> None:
        return None

    async def quiet(_exc: Exception) -> None:  # nats-py's own drain timeout, printed with a traceback otherwise
        return None

    nc = await nats.connect(url, drain_timeout=5, max_reconnect_attempts=0, error_cb=quiet)

    await nc.subscribe("bench.>", cb=cb)
    close: Callable[[], Awaitable[object]] = lambda: drain_within(nc)  # noqa: E731
    if case == CASES[1]:
        close = nc.drain
    elif case == CASES[2]:
        drain = nc.drain

        async def drain_after_hang() -> None:
            pause(pid)
            await drain()

        nc.drain = drain_after_hang  # type: ignore[method-assign]
    if case != CASES[2]:
        pause(pid)
    began = time.monotonic()
    try:
        with contextlib.suppress(Exception):  # nats-py's drain ends in FlushTimeoutError: the time is what counts
            await close()
        return time.monotonic() - began
    finally:
        os.kill(pid, signal.SIGCONT)
        if not nc.is_closed:
            await nc.close()


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    from podtax import natsserver

    seconds: dict[str, list[float]] = {case: [] for case in CASES}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        server = natsserver.start(Path(tmp) / "js")
        try:
            for run in range(args.runs):  # the cases interleaved
                for case in CASES:
                    seconds[case].append(asyncio.run(one(server.url, server.proc.pid, case)))
                    print(f"run {run + 1}: {case}: {seconds[case][-1]:.2f} s", flush=True)
                loads.append(os.getloadavg()[0])
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
            server.stop()
    anchor = statistics.median(seconds[CASES[1]])
    for case in CASES:
        median = statistics.median(seconds[case])
        runs = " / ".join(f"{s:.2f}" for s in seconds[case])
        print(f"{case}: median {median:.2f} s ({runs}) = {median / anchor:.2f}x the anchor")
    print(f"load {min(loads):.2f}-{max(loads):.2f} over {args.runs} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
