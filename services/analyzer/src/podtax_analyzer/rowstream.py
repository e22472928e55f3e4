"""Rows read and answered a batch at a time: a route that built every row as a model before answering held
hundreds of MB for its largest limits (audit hS: 264 MB for 100,000 phase rows).

The rows hold the store's reads lock from the statement to the last row (reads.Cursor.stream), so the answer
releases them however it ends: Starlette cancels the streaming task when the client goes and never closed the sync
generator it was given, which held the lock until the garbage collector freed it (15-20 s; a flush skips its
eviction meanwhile, and a writer waiting holds every new read back). `Streamed` closes them in a `finally`
around the whole answer, and drops a client that has taken no chunk for SEND_WAIT_S (a client that stopped
reading, its socket still open, held the lock for as long as it stayed connected). A batch is sent in slices of at
most SLICE bytes, so the cap measures a client making no progress rather than its rate: uvicorn's send waits for the
data before it to drain, and a whole batch (1,000 runs of 400-char details: ~690 KB) cut a client reading steadily
under ~23 KB/s (review r4)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from starlette.types import Message, Receive, Scope, Send

from podtax_analyzer.reads import Cursor, Rows

log = logging.getLogger(__name__)

BATCH = 1_000
SEND_WAIT_S = 30.0  # a chunk the client has not taken after this long ends the answer (the connection is closed)
SLICE = 64 * 1024  # the most bytes sent at once: a send waits for ~2 slices to drain (over a link; on loopback
# for a third of a kernel send buffer grown to MBs), so only a client under ~4 KB/s is cut, not one under ~23 KB/s


class Batches:
    """The rows of a statement as dicts by column name, `size` at a time, under the reads lock until the last or
    `close` (Rows)."""

    def __init__(self, rows: Rows) -> None:
        self._rows = rows
        self._cols = [d[0] for d in rows.description]

    def __iter__(self) -> Batches:
        return self

    def __next__(self) -> list[dict[str, Any]]:
        return [dict(zip(self._cols, row, strict=True)) for row in next(self._rows)]

    def close(self) -> None:
        self._rows.close()


def batches(cur: Cursor, query: str, parameters: Any = None, size: int = BATCH) -> Batches:
    """The rows of `query` as dicts by column name, `size` at a time; the statement runs before this returns (its
    error is the route's), the reads lock is held until the last row or `close` (Cursor.stream)."""
    return Batches(cur.stream(query, parameters, size))


class _Stalled(Exception):
    pass


class Streamed(StreamingResponse):
    """One JSON array of `model(row)` for every row, written a batch at a time (the same JSON as a list answered
    whole); the rows are read and the JSON made in the threadpool, and closed when the answer ends, however."""

    def __init__(self, rows: Batches, model: Callable[[dict[str, Any]], BaseModel]) -> None:
        self._rows, self._model = rows, model
        super().__init__(self._body(), media_type="application/json")

    def _chunk(self) -> bytes | None:
        """The next batch's models as JSON separated by commas; None after the last."""
        batch = next(self._rows, None)
        return None if batch is None else b",".join(self._model(r).model_dump_json().encode() for r in batch)

    async def _body(self) -> Any:
        sep = b"["
        while (chunk := await anyio.to_thread.run_sync(self._chunk)) is not None:
            for part in slices(sep + chunk):
                yield part
            sep = b","
        yield b"]" if sep == b"," else b"[]"

    async def stream_response(self, send: Send) -> None:
        async def bounded(message: Message) -> None:
            with anyio.move_on_after(SEND_WAIT_S) as waited:
                await send(message)
            if waited.cancelled_caught:
                raise _Stalled

        try:
            await super().stream_response(bounded)
        except _Stalled:  # returning unfinished: uvicorn closes the connection ('without completing response')
            log.warning("a client took no chunk of a streamed answer for %s s: answer ended, reads lock released",
                        SEND_WAIT_S)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Here, not in stream_response: a client gone before the answer starts cancels that task before it runs."""
        try:
            await super().__call__(scope, receive, send)
        finally:  # the answer sent, a row that failed, or the client gone (Starlette cancelled its streaming task)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._rows.close)


def slices(data: bytes, size: int = SLICE) -> list[memoryview]:
    """`data` in consecutive parts of at most `size` bytes, views of it (not copies)."""
    view = memoryview(data)
    return [view[i:i + size] for i in range(0, len(data), size)]


def json_array(rows: Batches, model: Callable[[dict[str, Any]], BaseModel]) -> StreamingResponse:
    """One JSON array of `model(row)` for every row of `rows`, written a batch at a time (Streamed)."""
    return Streamed(rows, model)
