"""Incremental node scores for the service's publications: each key's aggregates kept in memory.

`scores.node_scores` recomputes a key from every stored run; publishing after every batch that way
pulls the whole history of the touched keys each time (1.4 million metric rows at 100,000 runs), so
the analyzer's memory and CPU grew with history. `ScoreCache` keeps per key and tool build (build_switch.Part: a
key's score counts the newest build's runs alone after a clean switch) what a score needs (the sorted values, their
exact running sum, the runs counted, the first and newest times, the units and directions, the throttled and
overlapping runs) and updates it from the rows of the new runs only; a key of several builds merges its builds'
sorted values when it is scored (a stable sort of sorted runs: ~0.06 ms at 6,700 values), unless a clean switch
leaves one; a key it has not
seen yet is loaded from DuckDB once. The scores it returns are the same as `node_scores(con,
since_runs=...)` computes from the database, to the last bit (tests/analysis/test_score_cache*.py
compare them batch by batch).

A publication's cost per touched key (bench_store_history.py, 1,000 new runs into 1,200 keys of 6,700
values each: cache.update 0.25 s, where re-scoring each key's whole history took 0.74-0.90 s): the new
values and runs are merged into the sorted arrays in one pass (searchsorted + insert: a copy, no sort);
the mean comes from the running sum (scores.add_exact), updated from the new values only; past
NAME_IDS_FROM metric rows the new runs' ids are named in the query (see _new_rows). What still grows
with a key's history: the merge's copy, the BIMODAL check (Sarle's coefficient and the dip test read
every value, ~50 us a key of 6,700 values). The interval's rank for a count not met before is summed
in floats from 2,000 runs (scores._rank_float: 0.2 ms at 100,000 runs, where exact integers took ~1 s).

What can change in a run already counted, and how the cache follows:
- its OVERLAP flag (mark_overlaps flags older runs later; they come back among the new runs): a
  known run's rows reconcile the key's set of overlapping runs. Every other attribute of a stored
  'ok' run is written once (write_batch never rewrites a stored result).
- a reparse (Store.replace_results) replaces values and runs: the store counts its reparses
  (`Store.replaced`) and the cache drops everything when that count moves; keys are then loaded
  again as they are touched.
A run is counted in a key at most once (each key keeps its runs' numbers), so loading a key that
already holds runs not yet published, then meeting those runs as new, changes nothing.

A run's number is DuckDB's 64-bit `hash(run_id)`, computed by the queries: nothing is kept per run id.
(A dict from run id to a small number cost ~150 bytes a run, 15 MB at 100,000 runs, and grew with the
history.) Two runs of one key with the same hash would count as one: with k runs in a key, the chance
is about k*k / 2**65 (3e-8 at a million runs in one key), far below a disk's undetected error rate.

A run stored since the last update is read from the rows past its marks (the tables' rowids then) only:
DuckDB skips every older row group. Selected by id alone, the new rows cost a read of every metric row's
run id, whose blocks refilled DuckDB's cache at every publication (_new_row_queries).

Memory: 16 bytes per stored value (float64 value, uint64 run number), about 13 MB at 100,000 runs of
8 metrics, and nothing else per run; a publication reads at most NEW_CHUNK runs' rows at once. The
cache holds at most MAX_VALUES values: past it, the keys touched longest ago are dropped after a
publication and loaded from DuckDB again when next touched (the same scores, a load query dearer), so
its memory stays flat however long the history.

The SQL of the rows read and their flat loading (_grouped, _key_meta, _sorted_flat) are in score_rows.py.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
from podtax.events import NodeScore

from podtax_analyzer.build_switch import Part
from podtax_analyzer.score_rows import _ALL_KEYS, _KEY_FLAT, KEY_COLUMNS, Key, _grouped, _key_meta, _sorted_flat
from podtax_analyzer.scores import add_exact, isolated, key_args, parts_args, say_unscored, score_from_sorted
from podtax_analyzer.store import Store
from podtax_analyzer.store_lookup import LOOKUP_CHUNK

LOAD_CHUNK = 500  # keys per loading query: bounds the memory of a first publication over a long history
LOAD_ROWS = 100_000  # rows per flat loading query (one key may exceed it): 1,000,000 made the RSS peak 25 MB higher
NEW_CHUNK = 5000  # new runs per query: bounds the memory of a publication after a long pause
NAME_IDS_FROM = 4_000_000  # metric rows: from here the new runs' ids are named in the query (see _new_rows)
MAX_VALUES = 4_000_000  # values kept across keys (16 bytes each: 64 MB, 500,000 runs of 8 metrics)
WARN_EVERY_S = 600.0  # at most one warning that keys in use were dropped per this many seconds
log = logging.getLogger("podtax.analyzer.scores")

_NEW_ROWS = "AND r.run_id IN (SELECT unnest($1::varchar[]))"
# Runs stored since the last update: only the rows past its marks (rowids), so DuckDB skips every older row group.
_FRESH_ROWS = "AND r.rowid >= $2 AND m.rowid >= $3 AND r.run_id IN (SELECT unnest($1::varchar[]))"
_FRESH = "SELECT DISTINCT run_id FROM metrics WHERE rowid >= $1 AND run_id IN (SELECT unnest($2::varchar[]))"
_MARKS = "SELECT (SELECT coalesce(max(rowid) + 1, 0) FROM runs), (SELECT coalesce(max(rowid) + 1, 0) FROM metrics)"


@dataclass
class BuildState:
    """What one key's score needs of the counted runs of one tool build (build_switch.Part): the build (version text,
    tool_arch or None), values (sorted, metric unit) and runs (sorted run-id hashes), their exact running sum
    (scores.add_exact; None: sum the values), the first and newest end times (epoch microseconds), the distinct units
    and directions, how many runs were throttled or emulated, and which runs carry an OVERLAP flag."""

    build: str
    arch: str | None
    values: np.ndarray = field(default_factory=lambda: np.empty(0))
    runs: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))
    total: list[float] | None = field(default_factory=list)
    first_us: int = 2**63 - 1
    updated_us: int = 0
    units: set[str] = field(default_factory=set)
    directions: set[bool] = field(default_factory=set)  # the higher-is-better its runs said
    throttled: int = 0
    emulated: int = 0
    overlapped: set[int] = field(default_factory=set)

    def part(self) -> Part:
        return Part(build=self.build, arch=self.arch, vals=self.values, first_us=self.first_us,
                    last_us=self.updated_us, units=self.units, directions=self.directions, throttled=self.throttled,
                    overlap=len(self.overlapped), emulated=self.emulated, total=self.total)


@dataclass
class KeyState:
    """One key's runs, per tool build (by build number: score_rows.BUILD_HASH)."""

    builds: dict[int, BuildState] = field(default_factory=dict)

    @property
    def held(self) -> int:
        return sum(len(b.values) for b in self.builds.values())


class ScoreCache:
    """Node scores of the touched keys, kept up to date from the new runs (see the module doc)."""

    def __init__(self, max_values: int | None = None) -> None:
        self.keys: dict[Key, KeyState] = {}  # in the order they were last touched, the oldest first
        self.held = 0  # values held across keys
        self.max_values = MAX_VALUES if max_values is None else max_values
        self.replaced: int | None = 0  # Store.replaced when the cache was last consistent; None: unknown
        self.marks = (0, 0)  # rowids of runs and metrics from which rows were stored after the last update
        self.warned = -math.inf  # time.monotonic() of the last warning that keys in use were dropped
        # keys whose statistics raised: their state then (_scored)
        self.failed: dict[Key, tuple[tuple[int, ...], ...]] = {}

    def clear(self) -> None:
        self.keys.clear()
        self.failed.clear()
        self.held = 0
        self.replaced = None
        self.marks = (0, 0)

    def update(self, store: Store, run_ids: Iterable[str]) -> list[NodeScore]:
        """Fold the rows of `run_ids` in and return the scores of every key they touch, in key order.
        The reads of one update share a snapshot (one transaction). The cache starts afresh when the
        store's reparse count moved since it was last consistent, and does the update again when it
        moves during one (a reparse committed meanwhile)."""
        ids = sorted(set(run_ids))
        if not ids:
            return []
        while True:
            before = store.replaced
            if before != self.replaced:
                self.clear()
            touched: set[Key] = set()
            try:
                with store.transaction(write=False) as con:
                    marks = con.execute(_MARKS).fetchone()
                    for where, params in _new_row_queries(con, ids, self.marks):
                        new = dict(_grouped(con, where, params))
                        self._load(con, [k for k in new if k not in self.keys])
                        for key, rows in new.items():
                            self.keys[key] = self.keys.pop(key)  # the most recently touched last
                            self._merge_key(self.keys[key], rows)
                        touched.update(new)
            except BaseException:
                self.clear()  # a half-applied update must not survive; keys are loaded again next time
                raise
            self.marks = marks
            under_way = store.replacing  # read before `replaced` (see Store._replacing)
            after = store.replaced
            # a reparse under way (its rows, or the rowids of the marks, may still change): what this snapshot saw
            # is right, but not for later
            self.replaced = before if after == before and not under_way else None
            if after == before:
                scores = [s for key in sorted(touched) if (s := self._scored(key)) is not None]
                self._evict(touched)
                return scores

    def restore(self, store: Store, unscored: list[tuple[str, ...]]) -> list[NodeScore]:
        """Every stored key's score, as `scores.node_scores(con, unscored=unscored)` gives them (the service's
        restore at start), through the cache: every key is loaded, LOAD_CHUNK at a time, and the cache evicts
        as after a publication, so it stays within max_values, and the first publication finds them loaded and reads
        only the rows stored since this snapshot (its marks; a run stored before it, not yet published, is read by
        id from the whole tables and counted once, as a run published before). A key whose statistics raise is
        appended to `unscored` (the sweep keeps its last score). At 100,000 runs the process's peak rose by
        +72-76 MB this way, by +124-128 MB through node_scores (its per-key lists)."""
        recent = list(self.keys)  # loaded last, in the order they were touched: kept first under max_values (a sweep)
        self.clear()  # started afresh: held keys may lack runs stored since their update (still pending)
        before = store.replaced
        scores: list[NodeScore] = []
        try:
            with store.transaction(write=False) as con:
                marks = con.execute(_MARKS).fetchone()  # this snapshot's: rows past them are stored after it
                keys: list[Key] = sorted(con.execute(_ALL_KEYS).fetchall())
                held, stored = set(recent), set(keys)
                keys = [k for k in keys if k not in held] + [k for k in recent if k in stored]
                for first in range(0, len(keys), LOAD_CHUNK):
                    chunk = keys[first:first + LOAD_CHUNK]
                    self._load(con, chunk)
                    for key in chunk:
                        self.keys[key] = self.keys.pop(key)  # the most recently touched last
                        score = self._scored(key)
                        if score is not None:
                            scores.append(score)
                        elif key in self.failed:  # raised; no finite score (None from score_from_sorted) is
                            unscored.append(key)  # no stored score: the sweep deletes it, as node_scores' (r12)
                    self._evict(set())
        except BaseException:
            self.clear()
            raise
        self.marks = marks  # the first publication reads only the rows stored since (it read every row at marks 0)
        scores.sort(key=lambda s: (s.cluster, s.node, s.env, s.test, s.params_key, s.metric))  # in key order
        under_way = store.replacing  # read before `replaced` (see Store._replacing)
        self.replaced = before if store.replaced == before and not under_way else None
        return scores

    def _scored(self, key: Key) -> NodeScore | None:
        """score(key), or None when its statistics raise: that key is left out of the publication, the others are
        published (scores.say_unscored says it once per state of the key: not again while its runs stay the same,
        as when a publication NATS refused is done again)."""
        score, exc = isolated(self.score, key)  # MemoryError, RecursionError: the publication fails, retried
        if exc is not None:
            state = tuple((bid, len(b.values), len(b.overlapped), len(b.units), len(b.directions), b.throttled)
                          for bid, b in sorted(self.keys[key].builds.items()))
            if self.failed.get(key) != state:
                say_unscored(key, exc)
            self.failed[key] = state
            return None
        self.failed.pop(key, None)
        return score

    def score(self, key: Key) -> NodeScore | None:
        """The key's score from its builds' runs (scores.parts_args: the newest build's alone after a clean
        switch)."""
        return score_from_sorted(**key_args(key), **parts_args([b.part() for b in self.keys[key].builds.values()]))

    def _load(self, con: duckdb.DuckDBPyConnection, keys: list[Key]) -> None:
        """Every stored run of `keys` (new to the cache). Per chunk of keys, one grouped query reads what is
        small (unit, builds, row count); the rows themselves come flat, numbers only, at most LOAD_ROWS rows a
        query, sorted in numpy. A key's whole history gathered
        into DuckDB lists instead ran out of DuckDB's memory limit at about 100,000 runs a key."""
        for first in range(0, len(keys), LOAD_CHUNK):
            chunk = keys[first:first + LOAD_CHUNK]
            columns = {c: np.array([k[i] for k in chunk], dtype=object) for i, c in enumerate(KEY_COLUMNS)}
            con.register("score_keys", {"idx": np.arange(len(chunk), dtype=np.int32), **columns})
            try:
                meta = _key_meta(con)
                lo = 0
                while lo < len(meta["idx"]):  # keys in idx order, each spanning meta["n"] rows
                    hi = lo + max(1, int(np.searchsorted(np.cumsum(meta["n"][lo:]), LOAD_ROWS, side="right")))
                    flat = _sorted_flat(con.execute(_KEY_FLAT, [int(meta["idx"][lo]), int(meta["idx"][hi - 1])]))
                    self._load_flat(chunk, {c: meta[c][lo:hi] for c in meta}, flat)
                    lo = hi
            except BaseException:
                with contextlib.suppress(duckdb.Error):  # an aborted transaction refuses it: keep the first error
                    con.unregister("score_keys")
                raise
            con.unregister("score_keys")

    def _load_flat(self, chunk: list[Key], meta: dict[str, Any], flat: dict[str, np.ndarray]) -> None:
        """KeyStates from `_KEY_FLAT` rows (sorted by key, then value) and their keys' `_key_meta`."""
        idx = np.asarray(flat["idx"])
        ends = np.searchsorted(idx, meta["idx"], side="right")
        starts = np.searchsorted(idx, meta["idx"], side="left")
        vals, ids = np.asarray(flat["val"], dtype=float), np.asarray(flat["id"], dtype=np.uint64)
        overlap, throttled = np.asarray(flat["overlap"], dtype=bool), np.asarray(flat["throttled"], dtype=bool)
        updated, emulated = np.asarray(flat["updated_us"], dtype=np.int64), np.asarray(flat["emulated"], dtype=bool)
        bids = np.asarray(flat["bid"], dtype=np.uint64)
        for j, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):  # every key has rows (n > 0)
            state = KeyState()
            for bid in np.unique(bids[a:b]).tolist():
                mine = np.flatnonzero(bids[a:b] == bid) + a  # ascending: this build's values stay sorted
                runs = ids[mine]
                version, arch, units, hibs = meta["builds"][j][bid]
                state.builds[bid] = BuildState(
                    build=version, arch=arch, values=vals[mine], runs=np.sort(runs),
                    total=add_exact([], vals[mine].tolist()), first_us=int(updated[mine].min()),
                    updated_us=int(updated[mine].max()), units=set(units), directions=set(hibs),
                    throttled=int(np.count_nonzero(throttled[mine])), overlapped=set(runs[overlap[mine]].tolist()),
                    emulated=int(np.count_nonzero(emulated[mine])))
            self.keys[chunk[int(meta["idx"][j])]] = state
            self.held += b - a

    def _evict(self, touched: set[Key]) -> None:
        """Drop the keys touched longest ago while the cache holds more than max_values values. Dropping a
        key of this publication means the next one touching the same keys loads them again from DuckDB (a
        join over the whole history each time: at a million runs, 11.6 s a publication instead of 0.9 s,
        bench_store_history.py): that is logged, naming the setting to raise."""
        dropped = 0
        while self.held > self.max_values and self.keys:
            key = next(iter(self.keys))
            self.held -= self.keys.pop(key).held
            self.failed.pop(key, None)
            dropped += key in touched
        now = time.monotonic()
        if dropped and now - self.warned > WARN_EVERY_S:
            self.warned = now
            log.warning("the node-score cache dropped %d of the %d keys this publication touched: their values "
                        "exceed its %d (PODTAX_ANALYZER_SCORE_CACHE_VALUES), so each publication loads them from "
                        "DuckDB again, which is slow; raise it (16 bytes a value)", dropped, len(touched),
                        self.max_values)

    def _merge_key(self, state: KeyState, rows: dict[str, Any]) -> None:
        """Fold a key's rows of new runs into its builds' states (a counted run's build is written once; a reparse
        clears the cache)."""
        for bid in np.unique(rows["bid"]).tolist():
            mine = rows["bid"] == bid
            version, arch, units, hibs = rows["builds"][bid]
            s = state.builds.setdefault(bid, BuildState(build=version, arch=arch))
            s.units.update(units)
            s.directions.update(hibs)
            self._merge(s, {c: rows[c][mine] for c in ("ids", "overlap", "vals", "updated_us", "throttled",
                                                       "emulated")})

    def _merge(self, s: BuildState, rows: dict[str, Any]) -> None:
        """Count the runs of `rows` that `s` has not counted; reconcile the OVERLAP flag of the others."""
        nums = rows["ids"]  # the runs' numbers: hash(run_id), see the module doc
        overlap = rows["overlap"]
        at = np.searchsorted(s.runs, nums)
        known = at < len(s.runs)
        known[known] = s.runs[at[known]] == nums[known]
        if known.any():
            for num, flagged in zip(nums[known].tolist(), overlap[known].tolist()):
                if flagged:
                    s.overlapped.add(num)
                else:
                    s.overlapped.discard(num)
            fresh = ~known
            if not fresh.any():
                return
            rows = {name: rows[name][fresh] for name in ("vals", "updated_us", "throttled", "overlap", "emulated")}
            nums, overlap = nums[fresh], rows["overlap"]
        # merged in one pass (a sort of old + new cost O(n log n) a key): vals come ascending (the query
        # orders them) and each goes after the values equal to it, as a stable sort would place it
        s.values = np.insert(s.values, np.searchsorted(s.values, rows["vals"], side="right"), rows["vals"])
        self.held += len(rows["vals"])
        s.total = add_exact(s.total, rows["vals"].tolist())
        fresh_runs = np.sort(nums)
        s.runs = np.insert(s.runs, np.searchsorted(s.runs, fresh_runs), fresh_runs)
        s.updated_us = max(s.updated_us, int(rows["updated_us"].max()))
        s.first_us = min(s.first_us, int(rows["updated_us"].min()))
        s.throttled += int(np.count_nonzero(rows["throttled"]))
        s.emulated += int(np.count_nonzero(rows["emulated"]))
        if overlap.any():
            s.overlapped.update(nums[overlap].tolist())



def _new_row_queries(con: duckdb.DuckDBPyConnection, ids: list[str], marks: tuple[int, int]
                     ) -> Iterator[tuple[str, list[Any]]]:
    """The conditions (for _grouped) of the rows of runs `ids`, and their parameters. A table only grows at its end
    (rowids), and an update of a run moves its row to the end: a run stored since the last update (`marks`) is read
    from the rows past the marks (reading every metric row, a publication refilled DuckDB's block cache with the
    whole table and grew with it); any other (the result of a run published before, whose OVERLAP flag changed)
    from the whole tables. A reparse, which may move rows back, starts the cache afresh (marks 0)."""
    fresh = {run_id for (run_id,) in con.execute(_FRESH, [marks[1], ids]).fetchall()}
    new = [i for i in ids if i in fresh]
    for first in range(0, len(new), NEW_CHUNK):
        yield _FRESH_ROWS, [new[first:first + NEW_CHUNK], *marks]
    others = [i for i in ids if i not in fresh]
    if others:
        named = con.execute("SELECT count(*) FROM metrics").fetchone()[0] >= NAME_IDS_FROM
        step = LOOKUP_CHUNK if named else NEW_CHUNK
        for first in range(0, len(others), step):
            yield _new_rows(others[first:first + step], named)


def _new_rows(ids: list[str], named: bool) -> tuple[str, list[Any]]:
    """The condition of the rows of runs `ids`, and its parameters. Joined to the ids as one list, DuckDB scans
    every metric row (metrics has no index: one would cost memory and every write); with the ids named
    (`IN (?, ...)`) it filters that scan by them, which pays for binding them (~20 ms for 1,000 ids twice)
    from about 4,000,000 metric rows (500,000 runs of 8 metrics): at 1,000,000 runs, 1,000 new runs' rows
    came in 46 ms instead of 86, at 200,000 in 71 ms instead of 53 (bench_store_history.py)."""
    if not named:
        return _NEW_ROWS, [ids]
    marks = ", ".join("?" * len(ids))
    return f"AND r.run_id IN ({marks}) AND m.run_id IN ({marks})", ids + ids
