"""The score cache's reads: the SQL of the rows it loads and folds in, and their flat, numeric loading.

Split from score_cache.py (see its module doc for why the rows come flat and are sorted in numpy, and what
each shape cost); `ScoreCache` calls `_grouped` for the rows of new runs and `_key_meta` + `_KEY_FLAT` +
`_sorted_flat` for a key it loads whole.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import duckdb
import numpy as np

from podtax_analyzer.celldata import VERSION_SQL
from podtax_analyzer.scores import COUNTED, EMULATED

Key = tuple[str, str, str, str, str, str]  # cluster, node, env, test, params_key, metric
KEY_COLUMNS = ("cluster", "node", "env", "test", "params_key", "metric")
log = logging.getLogger("podtax.analyzer.scores")

# The selected runs' rows, flat and numeric, each with its key's hash k (sorted by key, then value, in numpy:
# _grouped), and apart, one row per key and distinct unit, direction and tool build. Gathered into DuckDB lists
# per key (list(m.value ORDER BY m.value), ... GROUP BY key), 5,000 runs' rows took 35-50 MB of DuckDB's memory
# a query whatever the chunk (1,000 runs: 33-41 MB), the RSS peak of a publication; these two, ~10 MB.
_KEY_HASH = "hash(r.cluster, r.node, r.env, r.test, r.params_key, m.name)"
# The key exactly, numbered within one query's rows (the same numbers in the meta and flat queries of one snapshot,
# which see the same keys): read when two keys share _KEY_HASH. Not another hash: DuckDB folds each argument of
# hash(...) into the hash of those before, so hash(<key>, salt) is a function of hash(<key>) and collides with it.
_EXACT_KEY = "dense_rank() OVER (ORDER BY r.cluster, r.node, r.env, r.test, r.params_key, m.name)"
_FROM = f"FROM runs r JOIN metrics m ON m.run_id = r.run_id WHERE {COUNTED} {{where}}"
# A run's tool build (build_switch.Part: its version text and executable's architecture), as a number. Two builds of
# one key alike: about b*b / 2**65 for b builds, as run numbers (score_cache's module doc).
BUILD_HASH = f"hash({VERSION_SQL}, r.tool_arch)"


def _meta_sql(key_hash: str) -> str:
    return (f"SELECT DISTINCT {key_hash} AS k, r.cluster, r.node, r.env, r.test, r.params_key, m.name AS metric, "
            f"m.unit, m.higher_is_better AS hib, {VERSION_SQL} AS build, r.tool_arch AS arch, {BUILD_HASH} AS bid "
            f"{_FROM}")


def _flat_sql(key_hash: str) -> str:
    return (f"SELECT {key_hash} AS k, m.value AS vals, hash(r.run_id) AS ids, {BUILD_HASH} AS bid, "
            "epoch_us(coalesce(r.ended_at, r.stored_at)) AS updated_us, "
            "coalesce(r.nr_throttled > 0, false) AS throttled, "
            f"coalesce(len(list_filter(r.flags, lambda f: starts_with(f, 'OVERLAP'))) > 0, false) AS overlap, "
            f"{EMULATED} AS emulated {_FROM}")


_META, _FLAT = _meta_sql(_KEY_HASH), _flat_sql(_KEY_HASH)
# Read instead when two keys of one query share _KEY_HASH (_grouped), never merged.
_META_EXACT, _FLAT_EXACT = _meta_sql(_EXACT_KEY), _flat_sql(_EXACT_KEY)
# Every key with a counted run (the service's restore at start, ScoreCache.restore).
_ALL_KEYS = (f"SELECT DISTINCT r.cluster, r.node, r.env, r.test, r.params_key, m.name "
             f"FROM runs r JOIN metrics m ON m.run_id = r.run_id WHERE {COUNTED}")
# A key being loaded: what is small, grouped (n: its rows), then its rows flat and numeric, by key then value.
# The keys' counted runs are picked by their (cluster, node, env, test, params_key) before the join to
# metrics, and score_keys joined last: joined to runs first, DuckDB built its hash table from that join (a
# row per run and key, every column): +86 MB of RSS for 500 keys at 100,000 runs, the peak of a publication
# that reads dropped keys back.
_KEY_RUNS = f"""
SELECT r.run_id, r.cluster, r.node, r.env, r.test, r.params_key, {{columns}}
FROM runs r SEMI JOIN (SELECT DISTINCT cluster, node, env, test, params_key FROM score_keys WHERE {{keys}}) s
     USING (cluster, node, env, test, params_key)
WHERE {COUNTED}
"""
# What is small of the keys being loaded: their row counts and a unit, then their distinct (unit, direction,
# build), grouped by the key's six columns and matched to score_keys by them exactly. Gathered into DuckDB lists
# per key (list(DISTINCT ...) GROUP BY the key's six columns), 500 keys' whole histories took +33-35 MB of RSS a
# query; an update of 1,200 keys not held, at 100,000 runs: +92 MB of RSS then. Grouped and matched by the key's
# 64-bit hash instead (until session 52), two keys of one hash (a loaded key, or another metric of its runs) shared
# their counts, units, directions and builds: a key took the other's direction and two units (CONFOUNDED).
_KEY_SIX = "r.cluster, r.node, r.env, r.test, r.params_key, m.name AS metric"
_KEY_COUNTS = f"""SELECT s.idx, g.n, g.unit FROM score_keys s JOIN (
    SELECT {_KEY_SIX}, count(*) AS n, any_value(m.unit) AS unit
    FROM ({_KEY_RUNS.format(columns="true AS counted", keys="true")}) r JOIN metrics m ON m.run_id = r.run_id
    GROUP BY r.cluster, r.node, r.env, r.test, r.params_key, m.name
) g USING (cluster, node, env, test, params_key, metric)
ORDER BY s.idx
"""
_KEY_DISTINCT = f"""SELECT s.idx, g.unit, g.hib, g.version, g.arch, g.bid FROM score_keys s JOIN (
    SELECT DISTINCT {_KEY_SIX}, m.unit, m.higher_is_better AS hib, r.version, r.arch, r.bid
    FROM ({_KEY_RUNS.format(columns=f"{VERSION_SQL} AS version, r.tool_arch AS arch, {BUILD_HASH} AS bid",
                            keys="true")}) r
         JOIN metrics m ON m.run_id = r.run_id
) g USING (cluster, node, env, test, params_key, metric)
"""
_FLAT_COLUMNS = (f"hash(r.run_id) AS id, {BUILD_HASH} AS bid, "
                 "epoch_us(coalesce(r.ended_at, r.stored_at)) AS updated_us, "
                 "coalesce(r.nr_throttled > 0, false) AS throttled, "
                 "coalesce(len(list_filter(r.flags, lambda f: starts_with(f, 'OVERLAP'))) > 0, false) AS overlap, "
                 f"{EMULATED} AS emulated")
# Unordered: sorted by key and value in numpy (_sorted_flat), which took less memory than DuckDB's ORDER BY.
_KEY_FLAT = f"""
SELECT k.idx, m.value AS val, r.id, r.bid, r.updated_us, r.throttled, r.overlap, r.emulated
FROM ({_KEY_RUNS.format(columns=_FLAT_COLUMNS, keys="idx BETWEEN $1 AND $2")}) r JOIN metrics m ON m.run_id = r.run_id
JOIN score_keys k ON r.cluster = k.cluster AND r.node = k.node AND r.env = k.env AND r.test = k.test
     AND r.params_key = k.params_key AND m.name = k.metric
WHERE k.idx BETWEEN $1 AND $2
"""

# The flat rows' columns, as numpy arrays of these types.
_COLUMNS = {"vals": float, "ids": np.uint64, "bid": np.uint64, "updated_us": np.int64, "throttled": bool,
            "overlap": bool, "emulated": bool}

Builds = dict[int, tuple[str, str | None, set[str], set[bool]]]  # per build number: version, arch, units, directions


def _key_meta(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Per key of score_keys with counted rows, in idx order: idx, n (its rows) and builds (per build number, its
    version text, tool_arch or None, and the distinct units and directions of its rows)."""
    counts = con.execute(_KEY_COUNTS).fetchnumpy()
    idx = np.asarray(counts["idx"])
    at = {i: j for j, i in enumerate(idx.tolist())}
    builds: list[Builds] = [{} for _ in at]
    for i, unit, hib, version, arch, bid in con.execute(_KEY_DISTINCT).fetchall():
        _, _, units, hibs = builds[at[i]].setdefault(int(bid), (str(version), arch, set(), set()))
        units.add(unit)
        hibs.add(hib)
    return {"idx": idx, "n": np.asarray(counts["n"]), "builds": builds}


def _known(v: Any) -> str | None:
    """A fetched tool_arch: None when the run names none (NULL, masked in numpy)."""
    return None if v is None or v is np.ma.masked else str(v)


def _sorted_flat(res: duckdb.DuckDBPyConnection) -> dict[str, np.ndarray]:
    """The columns of a `_KEY_FLAT` result as numpy arrays, its rows ordered by key, then value."""
    flat = {c: np.asarray(v) for c, v in res.fetchnumpy().items()}
    order = np.lexsort((flat["val"], flat["idx"]))
    return {c: v[order] for c, v in flat.items()}


def _grouped(con: duckdb.DuckDBPyConnection, where: str, params: list[Any]) -> Iterator[tuple[Key, dict[str, Any]]]:
    """(key, {"builds": per build number its version, arch, units and directions (Builds), and the key's rows as
    arrays, ascending by value, "bid" each row's build number}) for each key of
    the rows `where` selects. Keys are told apart by their 64-bit hash within one query (two keys of a publication
    alike: about k*k / 2**65, as run numbers, see the module doc); the meta rows carry each key whole, so two keys of
    one hash are seen there, and the rows are then read numbered by the key exactly (_EXACT_KEY) instead: never
    merged."""
    meta = _key_hashes(con, _META.format(where=where), params)
    sql = _FLAT
    if isinstance(meta, tuple):
        log.warning("node-score keys %s and %s have the same 64-bit hash; this publication's rows are told apart by "
                    "the keys themselves", *meta)
        meta, sql = _key_hashes(con, _META_EXACT.format(where=where), params), _FLAT_EXACT
        assert not isinstance(meta, tuple), meta  # distinct keys have distinct ranks
    flat = con.execute(sql.format(where=where), params).fetchnumpy()
    keys = np.asarray(flat["k"], dtype=np.uint64)
    cols = {c: np.asarray(flat[c], dtype=t) for c, t in _COLUMNS.items()}
    del flat
    order = np.lexsort((cols["vals"], keys))
    keys = keys[order]
    cols = {c: v[order] for c, v in cols.items()}
    bounds = [0, *(np.flatnonzero(keys[1:] != keys[:-1]) + 1).tolist(), len(keys)]
    for a, b in zip(bounds[:-1], bounds[1:], strict=False):
        if a == b:
            continue
        key, builds = meta[int(keys[a])]
        yield key, {"builds": builds, **{c: v[a:b] for c, v in cols.items()}}


def _key_hashes(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]
                ) -> dict[int, tuple[Key, Builds]] | tuple[Key, Key]:
    """Per key hash of the meta rows `sql` reads: the key and its builds (per build number: version text, known tool
    architecture or None, units and directions); or two keys that share a hash."""
    meta: dict[int, tuple[Key, Builds]] = {}
    res = con.execute(sql, params).fetchnumpy()
    for i, k in enumerate(res["k"].tolist()):
        key: Key = tuple(str(res[c][i]) for c in KEY_COLUMNS)  # type: ignore[assignment]
        known, builds = meta.setdefault(k, (key, {}))
        if known != key:
            return known, key
        _, _, units, hibs = builds.setdefault(int(res["bid"][i]), (str(res["build"][i]), _known(res["arch"][i]),
                                                                    set(), set()))
        units.add(str(res["unit"][i]))
        hibs.add(bool(res["hib"][i]))
    return meta
