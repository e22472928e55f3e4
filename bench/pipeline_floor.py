"""The raw floor of the pipeline's topology, for bench_pipeline.py: publisher -> relay -> store.

The same shape as podtax's raw log -> parser -> analyzer path, with nothing but nats-py and DuckDB:
- the relay (a process, the parser's place) pulls raw-log messages `--batch` at a time and, for
  each, publishes a result message of the real size (pipelined, JetStream-acked), then acks the batch;
- the store (a process, the analyzer's place) pulls raw logs and results `--batch` at a time, inserts
  each message as it arrived (id, subject, payload) in one columnar INSERT ... ON CONFLICT DO NOTHING
  per batch, commits, then acks; it exits once `--count` results are committed.
No decoding, no validation, no statistics: the upper bound of the same topology on this machine.

    python bench/pipeline_floor.py relay NATS_URL RESULT_PAYLOAD_FILE --batch 256
    python bench/pipeline_floor.py store NATS_URL DB --batch 1000 --count N
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import duckdb
import nats
import numpy as np
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from podtax.oneline_args import OneLineParser
from podtax_analyzer import duckcon

STREAM = "FLOOR"
LOGS, RESULTS = "floor.log", "floor.result"


async def ensure_stream(js: nats.js.JetStreamContext) -> None:
    await js.add_stream(StreamConfig(name=STREAM, subjects=[f"{LOGS}.>", f"{RESULTS}.>"]))


async def pull(js: nats.js.JetStreamContext, durable: str,
               subjects: list[str]) -> nats.js.JetStreamContext.PullSubscription:
    await ensure_stream(js)
    await js.add_consumer(STREAM, ConsumerConfig(
        durable_name=durable, ack_policy=AckPolicy.EXPLICIT, max_ack_pending=50_000,
        filter_subjects=subjects if len(subjects) > 1 else None,
        filter_subject=subjects[0] if len(subjects) == 1 else None))
    return await js.pull_subscribe_bind(durable=durable, stream=STREAM)


async def fetch(sub: nats.js.JetStreamContext.PullSubscription, batch: int) -> list[nats.aio.msg.Msg]:
    try:
        return await sub.fetch(batch, timeout=0.5)
    except (NatsTimeout, TimeoutError):
        return []


async def relay(url: str, result_payload: bytes, batch: int) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream(publish_async_max_pending=20_000)
    sub = await pull(js, "relay", [f"{LOGS}.>"])

    async def handle(msgs: list[nats.aio.msg.Msg]) -> None:
        futures = [await js.publish_async(f"{RESULTS}.{m.subject.rsplit('.', 1)[1]}", result_payload,
                                          headers={"Nats-Msg-Id": "r" + m.headers["Nats-Msg-Id"]}) for m in msgs]
        for fut in futures:
            await fut
        for m in msgs:
            await m.ack()

    await overlapped(sub, batch, handle, lambda: False)


async def store(url: str, db: Path, batch: int, count: int) -> None:
    con = duckcon.connect(db)  # as the analyzer's store opens it
    con.execute("CREATE TABLE IF NOT EXISTS messages (id VARCHAR PRIMARY KEY, subject VARCHAR, payload VARCHAR)")
    nc = await nats.connect(url)
    js = nc.jetstream()
    sub = await pull(js, "store", [f"{LOGS}.>", f"{RESULTS}.>"])
    results = 0
    finished = asyncio.Event()

    async def handle(msgs: list[nats.aio.msg.Msg]) -> None:
        nonlocal results
        columns = {"id": _column([m.headers["Nats-Msg-Id"] for m in msgs]),
                   "subject": _column([m.subject for m in msgs]),
                   "payload": _column([m.data.decode() for m in msgs])}
        await asyncio.to_thread(_insert, con, columns)
        for m in msgs:
            await m.ack()
        results += sum(m.subject.startswith(RESULTS) for m in msgs)
        if results >= count:
            finished.set()

    consuming = asyncio.create_task(overlapped(sub, batch, handle, finished.is_set))
    await finished.wait()  # exit as soon as the last result is committed, not after the next fetch times out
    consuming.cancel()
    await nc.flush()
    await nc.close()
    con.close()


async def overlapped(sub: nats.js.JetStreamContext.PullSubscription, batch: int,
                     handle: Callable[[list[nats.aio.msg.Msg]], Awaitable[None]], done: Callable[[], bool]) -> None:
    """Fetch the next batch while the previous one is handled (as podtax's batch consumers do)."""
    handling: asyncio.Task[None] | None = None
    while not done():
        msgs = await fetch(sub, batch)
        if handling is not None:
            await handling
            handling = None
        if msgs:
            handling = asyncio.create_task(handle(msgs))
    if handling is not None:
        await handling


def _column(values: list[str]) -> np.ndarray:
    return np.fromiter(values, dtype=object, count=len(values))


def _insert(con: duckdb.DuckDBPyConnection, columns: dict[str, np.ndarray]) -> None:
    cur = con.cursor()
    cur.execute("BEGIN")
    cur.register("batch", columns)
    cur.execute("INSERT INTO messages SELECT id::VARCHAR, subject::VARCHAR, payload::VARCHAR FROM batch "
                "ON CONFLICT DO NOTHING")
    cur.unregister("batch")
    cur.execute("COMMIT")
    cur.close()


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("role", choices=["relay", "store"])
    ap.add_argument("url")
    ap.add_argument("path", type=Path, help="relay: the result payload file; store: the DuckDB file")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--count", type=int, default=0)
    args = ap.parse_args(argv)
    if args.role == "relay":
        asyncio.run(relay(args.url, args.path.read_bytes(), args.batch))
    else:
        asyncio.run(store(args.url, args.path, args.batch, args.count))
    return 0


if __name__ == "__main__":
    sys.exit(main())
