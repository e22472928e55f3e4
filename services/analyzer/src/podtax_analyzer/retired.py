"""Retired runs: a node's runs started before a time the user gives no longer count in its scores (`podtax retire`,
POST /api/retired), after the node changed (a new build of the tool that interleaved with the old, a hardware change,
a kernel upgrade). Its old runs kept it CONFOUNDED or skewed its score for good; they stay stored, for reports and
comparisons. One row a node in the table `retired` (a later retire replaces it; DELETE undoes it); scores.COUNTED
leaves those runs out, so node_scores and the service's ScoreCache count the same runs. Written under
Store.rescoring: the score caches start afresh and the service sweeps the scores of keys left without a run.
"""

from __future__ import annotations

import difflib
from datetime import UTC, datetime
from typing import Any

import duckdb

from podtax_analyzer.scores import ELIGIBLE, RUN_TIME
from podtax_analyzer.store import Store


class Refusal(ValueError):
    """The retirement asked for is not made: `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


_LISTED = f"""
SELECT t.cluster, t.node, t.before_time, t.retired_at,
       (SELECT count(*) FROM runs r WHERE r.cluster = t.cluster AND r.node = t.node AND r.status = 'ok'
          AND {RUN_TIME} < t.before_time) AS runs
FROM retired t {{where}} ORDER BY t.cluster, t.node
"""


# Per score (env, test, params_key, metric): the runs it would count but for the retirement (scores.ELIGIBLE).
# count(*): (run_id, name) is unique in metrics (schema.sql); count(DISTINCT run_id) cost ~1.5x more.
_BY_SCORE = f"""
SELECT t.cluster, t.node, r.env, r.test, r.params_key, m.name, count(*)
FROM retired t JOIN runs r ON r.cluster = t.cluster AND r.node = t.node JOIN metrics m ON m.run_id = r.run_id
WHERE {ELIGIBLE} AND {RUN_TIME} < t.before_time {{where}}
GROUP BY ALL ORDER BY ALL
"""


def listed(con: duckdb.DuckDBPyConnection, cluster: str | None = None, node: str | None = None) -> list[dict[str, Any]]:
    """Every retirement (or one node's): cluster, node, before (runs started before it are left out), retired_at
    (when the user retired them), runs (how many of the node's successful runs that leaves out, every test and env)
    and scores (per score it changes: env, test, params_key, metric and the runs it leaves out of that score)."""
    where, params = [], []
    for col, val in (("cluster", cluster), ("node", node)):
        if val is not None:
            where.append(f"t.{col} = ?")
            params.append(val)
    sql = _LISTED.format(where="WHERE " + " AND ".join(where) if where else "")
    rows = [{"cluster": c, "node": n, "before": b.astimezone(UTC), "retired_at": at.astimezone(UTC), "runs": runs,
             "scores": []} for c, n, b, at, runs in con.execute(sql, params).fetchall()]
    found = {(r["cluster"], r["node"]): r["scores"] for r in rows}
    for c, n, env, test, key, metric, runs in con.execute(
            _BY_SCORE.format(where="".join(" AND " + w for w in where)), params).fetchall():
        found[c, n].append({"env": env, "test": test, "params_key": key, "metric": metric, "runs": runs})
    return rows


def _known(con: duckdb.DuckDBPyConnection, node: str, cluster: str | None) -> str:
    """The stored nodes (of `cluster` when given) closest to `node`'s name (all of them when few), said after its
    refusal; a `cluster` without runs names the clusters that have some."""
    nodes = [n for (n,) in con.execute("SELECT DISTINCT node FROM runs WHERE cluster = coalesce(?, cluster) "
                                       "ORDER BY node", [cluster]).fetchall()]
    if cluster is not None and not nodes:
        clusters = [c for (c,) in con.execute("SELECT DISTINCT cluster FROM runs ORDER BY cluster").fetchall()]
        if clusters:
            return f" (cluster {cluster!r} has no runs; the clusters with runs: {', '.join(clusters)})"
    close = difflib.get_close_matches(node, nodes, n=5, cutoff=0.6)
    if close:
        return f" (the closest stored: {', '.join(close)})"
    if nodes and len(nodes) <= 10:
        return f" (the stored ones: {', '.join(nodes)})"
    return f" ({len(nodes):,} nodes have runs)" if nodes else " (no run is stored yet)"


def _which(clusters: list[str]) -> str:
    """The refusal's advice for a node in several clusters: '--cluster east or --cluster local'."""
    return " or ".join(f"--cluster {c}" for c in clusters)


def _cluster_of(con: duckdb.DuckDBPyConnection, node: str, cluster: str | None) -> str:
    """The cluster of `node`'s stored runs (`cluster` when given), else Refusal: no run of it, or several clusters."""
    clusters = [c for (c,) in con.execute("SELECT DISTINCT cluster FROM runs WHERE node = ? ORDER BY cluster",
                                          [node]).fetchall()]
    later = ("; a node is retired once its runs are stored (by their start times: retired later, the same runs are "
             "left out)")
    if cluster is not None and clusters and cluster not in clusters:  # a wrong --cluster
        raise Refusal(404, f"no run of node {node!r} in cluster {cluster!r} is stored (its runs are in cluster "
                           f"{', '.join(clusters)}): give {_which(clusters)}")
    if not clusters:
        where = f" in cluster {cluster!r}" if cluster is not None else ""
        raise Refusal(404, f"no run of node {node!r}{where} is stored{_known(con, node, cluster)}: name the node as "
                           f"its runs do (podtax results lists them){later}")
    if cluster is None and len(clusters) > 1:
        raise Refusal(422, f"node {node!r} has runs in clusters {', '.join(clusters)}: say which ({_which(clusters)})")
    return cluster or clusters[0]


def _run_ids(con: duckdb.DuckDBPyConnection, cluster: str, node: str) -> set[str]:
    """The node's successful runs: their scores change (the service publishes them and sweeps what has none)."""
    return {i for (i,) in con.execute("SELECT run_id FROM runs WHERE cluster = ? AND node = ? AND status = 'ok'",
                                      [cluster, node]).fetchall()}


def retire(store: Store, node: str, before: datetime, cluster: str | None = None,
           now: datetime | None = None) -> tuple[dict[str, Any], set[str]]:
    """Leave `node`'s runs started before `before` out of its scores (a time zone-less time is UTC). Returns the
    retirement (as `listed`) and the node's run ids (scores to publish again). Refusal: `before` in the future,
    no run of the node stored (naming the closest stored nodes), its runs in several clusters and no `cluster`, or
    no successful run of it started before `before` (nothing to retire: naming its first)."""
    now = now or datetime.now(UTC)
    before = before if before.tzinfo else before.replace(tzinfo=UTC)
    if before > now:
        raise Refusal(422, f"before {before.isoformat()} is in the future (now {now.isoformat(timespec='seconds')}): "
                           "runs not made yet cannot be retired; give the time the node changed")
    with store.cursor() as con:
        cluster = _cluster_of(con, node, cluster)
        older, first = con.execute(f"SELECT count(*) FILTER ({RUN_TIME} < ?), min({RUN_TIME}) FROM runs r WHERE "
                                   "cluster = ? AND node = ? AND status = 'ok'", [before, cluster, node]).fetchone()
    if not older:  # a date before every run (a typo, the wrong year): said, nothing written
        since = (f"its first successful run started {first.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" if first
                 else "it has no successful run")
        raise Refusal(422, f"no run of node {node!r} (cluster {cluster}) started before "
                           f"{before.astimezone(UTC):%Y-%m-%d %H:%M:%S} "
                           f"UTC ({since}): nothing to retire; give the time the node changed, after its first run "
                           "(podtax results lists its runs); if older runs are still to be stored (an import, a held "
                           "outbox), retire once they are: by their start times the same runs are left out")
    with store.rescoring() as con:
        con.execute("INSERT INTO retired VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                    "before_time = excluded.before_time, retired_at = excluded.retired_at",
                    [cluster, node, before, now])
        return listed(con, cluster, node)[0], _run_ids(con, cluster, node)


def undo(store: Store, node: str, cluster: str | None = None) -> tuple[dict[str, Any], set[str]]:
    """Count every run of `node` again: the retirement removed (as `listed` gave it) and the node's run ids.
    Refusal (404) when none of its runs are retired."""
    with store.cursor() as con:
        found = listed(con, cluster, node)
    if not found:
        raise Refusal(404, f"no runs of node {node!r}{f' in cluster {cluster!r}' if cluster else ''} are retired "
                           "(podtax retire --list shows those that are)")
    if len(found) > 1:
        clusters = [r["cluster"] for r in found]
        raise Refusal(422, f"node {node!r} has retired runs in clusters {', '.join(clusters)}: say which "
                           f"({_which(clusters)})")
    gone = found[0]
    with store.rescoring() as con:
        con.execute("DELETE FROM retired WHERE cluster = ? AND node = ?", [gone["cluster"], node])
        return gone, _run_ids(con, gone["cluster"], node)
