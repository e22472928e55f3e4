"""Process settings for a service that consumes batches (the parser, the analyzer): call
:func:`tune_for_batches` once at start-up, before the service starts its threads."""

from __future__ import annotations

import contextlib
import ctypes
import gc

MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt parameter number
# Objects the collector tracks per event of a batch in flight, with room to spare: a decoded event is
# ~20 (its models, their dicts and lists), plus its NATS message and its rows, and the next batch is
# fetched and decoded while one is handled.
TRACKED_PER_EVENT = 100
MIN_GC_THRESHOLD = 100_000


def gc_threshold(batch: int) -> int:
    """Allocations between two young-generation collections, for batches of `batch` events."""
    return max(MIN_GC_THRESHOLD, TRACKED_PER_EVENT * batch)


def tune_for_batches(batch: int = 1000) -> None:
    """Run the cyclic garbage collector less often, and cap glibc's malloc arenas.

    Each batch allocates hundreds of thousands of short-lived objects (pydantic models, rows) that
    reference counting frees anyway; with the default threshold the cyclic collector still ran
    every 700 allocations (measured under load: ~25% of the analyzer's CPU, ~15% of the parser's).
    A young-generation collection scans the objects alive at that moment: with a threshold below
    what a batch in flight holds (10,000 before, while one analyzer batch of 1,000 events holds
    ~20,000 decoded objects alone), every event's objects were scanned, then again in the middle
    generation as survivors (bench_pipeline --quick: ~19 µs per result of the analyzer's CPU, ~8 of
    the parser's). Above it (gc_threshold), a batch's objects are mostly freed before a collection
    comes. What exists at this point (the imported modules, hundreds of thousands of objects) is moved
    out of the collector's view (gc.freeze): a full collection then scans only what the service built
    since."""
    gc.set_threshold(gc_threshold(batch), 50, 100)
    gc.freeze()
    limit_malloc_arenas(MALLOC_ARENAS)


def limit_malloc_arenas(arenas: int) -> None:
    """At most `arenas` glibc malloc arenas (as MALLOC_ARENA_MAX would) for the threads started from now
    on: the batch writer's and DuckDB's threads each took an arena of their own, and the memory freed
    in one was not reused by the others (analyzer, 100,000 results, one run each: RSS 234-269 MB
    against 275-327 MB). A no-op where the C library is not glibc."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(_M_ARENA_MAX, arenas)
