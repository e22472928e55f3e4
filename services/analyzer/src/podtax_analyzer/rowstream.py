"""Rows read and answered a batch at a time: a route that built every row as a model before answering held
hundreds of MB for its largest limits (audit hS: 264 MB for 100,000 phase rows)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from podtax_analyzer.reads import Cursor

BATCH = 1_000


def batches(cur: Cursor, query: str, parameters: Any = None, size: int = BATCH) -> Iterator[list[dict[str, Any]]]:
    """The rows of `query` as dicts by column name, `size` at a time; the statement runs before this returns (its
    error is the route's), the reads lock is held until the last row (Cursor.stream)."""
    rows = cur.stream(query, parameters, size)
    cols = [d[0] for d in rows.description]
    return ([dict(zip(cols, row, strict=True)) for row in chunk] for chunk in rows)


def json_array(models: Iterable[Iterable[BaseModel]]) -> StreamingResponse:
    """One JSON array of every model, written a batch at a time (the same JSON as a list answered whole)."""
    def body() -> Iterator[bytes]:
        sep = b"["
        for batch in models:
            if chunk := b",".join(m.model_dump_json().encode() for m in batch):
                yield sep + chunk
                sep = b","
        yield b"]" if sep == b"," else b"[]"

    return StreamingResponse(body(), media_type="application/json")
