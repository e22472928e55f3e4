"""Find the poison in a batch that cannot be committed, so only it is dead-lettered.

The analyzer commits a whole batch in one DuckDB transaction. When that fails, the batch is split
in halves and each half committed on its own, recursively, down to single events. An event that
fails alone while other events of the batch were committed is poison: it is rejected with its own
error as the reason. When every event fails alone, the fault is not in the events (a full disk, a
broken database file): the first error is raised and the bus retries the whole batch later.
So is any failure of the storage itself (an I/O error, a transaction DuckDB could not commit or roll
back): a disk filling up while the batch is bisected lets some halves through and fails others, and
those others are not poison.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar


class HasId(Protocol):
    @property
    def id(self) -> str: ...


E = TypeVar("E", bound=HasId)


def write_isolating(write: Callable[[list[E]], set[str]], batch: Sequence[E]) -> tuple[set[str], dict[str, str]]:
    """`write(batch)`; if it raises, bisect. Returns (what the writes returned, {poison event id: reason}).

    Each `write` call must be all-or-nothing (one transaction), so a failed call leaves no trace."""
    try:
        return write(list(batch)), {}
    except Exception:
        if len(batch) <= 1:
            raise
    stored: set[str] = set()
    failed: list[tuple[E, Exception]] = []

    def walk(part: Sequence[E]) -> None:
        try:
            stored.update(write(list(part)))
        except Exception as exc:  # noqa: BLE001 - narrowed down to one event, then reported
            if len(part) == 1:
                failed.append((part[0], exc))
                return
            mid = len(part) // 2
            walk(part[:mid])
            walk(part[mid:])

    mid = len(batch) // 2
    walk(batch[:mid])
    walk(batch[mid:])
    if len(failed) == len(batch):
        raise failed[0][1]
    for _, exc in failed:
        if storage_fault(exc):
            raise exc
    return stored, {e.id: f"poison: {type(exc).__name__}: {exc}"[:1000] for e, exc in failed}


STORAGE_FAULTS = ("IOException", "TransactionException", "FatalException", "OutOfMemoryException")


def storage_fault(exc: BaseException) -> bool:
    """The database or its disk failed (not the event): the batch is retried later, nothing is dead-lettered."""
    return isinstance(exc, OSError) or type(exc).__name__ in STORAGE_FAULTS or "No space left" in str(exc)
