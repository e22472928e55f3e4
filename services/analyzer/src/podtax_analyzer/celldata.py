"""Loading cells from DuckDB: one grouped query returns every cell side's values in run order.

A cell is (campaign, cluster, node, test, params_key, metric) (the same node name in two clusters is
two cells); a side is its runs of one environment with status 'ok'. The two sides are named by the
data (sides_for): host and kubernetes (pod) for the pod tax, kubernetes and nomad for the control
plane. The grouping, ordering and per-side facts (tool versions, throttling, SHORT flags) are done in
DuckDB, so Python only sees one row per cell side. Run ids are not loaded with the values (a million
of them cost more than the statistics): run_ids_at reads the few that are named (outliers) afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
from podtax import sides, templates
from podtax.parsers.fio_flags import ROUNDED_DIRECTIONS
from podtax.parsers.timeline import rests_on_bound, rests_on_upper_bound
from podtax.phases import phase_of_metric

from podtax_analyzer.celldata_failures import Failures, SlowObjects, side_failures, side_few, side_slow

HOST = "host"
POD = "kubernetes"
_SEP = "\x1f"
ID_LEN = 12

# Same hash in SQL and Python (see cell_id); used to find a cell by its id.
CELL_ID_SQL = (f"substr(sha256(concat_ws(chr(31), r.campaign, r.cluster, r.node, r.test, r.params_key, m.name)), "
               f"1, {ID_LEN})")
VERSION_SQL = ("concat_ws(' ', r.tool, r.tool_version, "
               "CASE WHEN r.tool_build IS NOT NULL AND r.tool_build <> '' THEN '(build ' || r.tool_build || ')' END)")


def sides_for(test: str, envs: Iterable[str]) -> tuple[str, str]:
    """(baseline, candidate) of a cell (podtax.sides.pair): its template's two environments, else the two
    it has; a one-sided template gives (its environment, ""); host/kubernetes when nothing else is known."""
    template = templates.REGISTRY.get(test)
    allowed = tuple(template.environments) if template else ()
    if len(allowed) == 2:
        return sides.pair(allowed)
    with contextlib.suppress(ValueError):
        return sides.pair(set(envs))
    if len(allowed) == 1:
        return allowed[0], ""
    return HOST, POD


def cell_id(campaign: str, cluster: str, node: str, test: str, params_key: str, metric: str) -> str:
    """Stable short id (12 hex digits) of a cell key."""
    raw = _SEP.join((campaign, cluster, node, test, params_key, metric)).encode()
    return hashlib.sha256(raw).hexdigest()[:ID_LEN]


@dataclass
class Side:
    """One side of a cell. values: metric values in run order (metric unit); run_ids_at names the run of
    a position. versions: distinct "tool version (build b)" strings ("" = unknown). n_throttled: runs whose
    cgroup throttled periods rose (nr_throttled > 0). throttled_usec: their summed throttled time
    (microseconds). cpu_limits: distinct CPU limits in cores (None = unlimited). n_short: runs carrying
    a SHORT flag; short_example: one such flag text. n_rounded: runs whose fio ROUNDED_RUNTIME flag makes this
    metric (an IOPS or bandwidth) too low; rounded_example: one such flag text. n_overlap: runs carrying an
    OVERLAP flag (their time span overlapped another run on the node, see overlap.py); overlap_example: one
    such flag text. n_emulated: runs carrying an EMULATED flag (store_rows.emulated_flag); emulated_example: one.
    n_mismatch: runs carrying a VERSION_MISMATCH flag (the log printed another version than the run
    recorded); mismatch_example: one such flag text. n_params: runs whose log echoed other parameters than
    requested (THREADS_MISMATCH, PARAM_MISMATCH); params_example: one such flag text. n_imported: runs
    whose raw log came from `podtax import` (raw_logs.imported_from), not from a run podtax made.
    failures: failed and left-behind objects of the side's control-plane runs (Failures). n_lower_bound: runs
    whose value of this metric is a lower bound (the timeline parser's LOWER_BOUND run flag names it);
    least_bound: the least such value (None: none is). n_counted_given_up: runs whose percentiles of this metric's
    phase counted objects given up while waiting (their flag names the phase's max, which any such object bounds).
    n_watch_gap: runs whose value of this metric is an upper bound (the timeline parser's WATCH_GAP run flag names
    it: timed by end points a re-list saw after a dropped watch; the true time was shorter); n_held: the same told
    by the RETRIED run flag (a call sent again and not re-timed: its phases hold the wait); greatest_gap: the
    greatest value of either (None: none is). n_retried: runs flagged RETRIED at all (objects timed from a retry).
    n_delete_refused: runs flagged DELETE_REFUSED (failed runs whose deletes were refused: create and bind figures).
    n_few: runs of the side (params and env) without this metric because their FEW_OBSERVATIONS flag names it (a
    percentile they had too few observations for, parsers/sockperf.py); few_example: one such flag text.
    units: the distinct units the side's runs gave the metric in (one, unless a producer changed it).
    directions: the distinct higher-is-better the side's runs gave the metric (one, unless a producer changed it).
    slow: the side's objects of this metric's phase that took over 10x its median (celldata_failures.SlowObjects),
    None when none did. tool_archs: the distinct architectures the side's runs' executables were built for, among
    the runs that know it (the provenance block's tool_arch; an older wrapper or agent gives none)."""

    env: str
    values: np.ndarray
    versions: list[str] = field(default_factory=list)
    tool_archs: list[str] = field(default_factory=list)
    n_throttled: int = 0
    throttled_usec: int = 0
    cpu_limits: list[float | None] = field(default_factory=list)
    n_short: int = 0
    short_example: str | None = None
    n_rounded: int = 0
    rounded_example: str | None = None
    n_overlap: int = 0
    overlap_example: str | None = None
    n_emulated: int = 0
    emulated_example: str | None = None
    n_mismatch: int = 0
    mismatch_example: str | None = None
    n_params: int = 0
    params_example: str | None = None
    n_imported: int = 0
    failures: Failures = field(default_factory=Failures)
    n_lower_bound: int = 0
    least_bound: float | None = None
    n_counted_given_up: int = 0
    n_watch_gap: int = 0
    n_held: int = 0
    n_retried: int = 0
    n_delete_refused: int = 0
    greatest_gap: float | None = None
    n_few: int = 0
    few_example: str | None = None
    units: list[str] = field(default_factory=list)
    directions: list[bool] = field(default_factory=list)
    slow: SlowObjects | None = None

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median_is_bound(self) -> bool:
        """Whether the median over runs is a lower bound: a run's bounded value can only be larger in truth, so
        it moves the median only from at or below the median's rank(s) (the parser's order-statistic rule)."""
        return self.least_bound is not None and rests_on_bound(np.sort(self.values), 50.0, self.least_bound)

    @property
    def median_is_upper_bound(self) -> bool:
        """Whether the median over runs is an upper bound (WATCH_GAP, RETRIED's held): the mirror of median_is_bound,
        a run's bounded value can only be smaller in truth, so it moves the median only from at or above its rank."""
        return self.greatest_gap is not None and rests_on_upper_bound(np.sort(self.values), 50.0, self.greatest_gap)


def empty_side(env: str) -> Side:
    return Side(env, np.zeros(0))


@dataclass
class CellData:
    """Both sides of one cell plus its key and metric facts (unit, direction)."""

    campaign: str
    cluster: str
    node: str
    test: str
    params_key: str
    metric: str
    unit: str
    higher_is_better: bool
    host: Side  # the baseline side (host for the pod tax, kubernetes against nomad)
    pod: Side  # the candidate side
    baseline: str = HOST
    candidate: str = POD  # "" for a one-sided test (pod-startup): compare campaigns instead
    starts_mixed: str | None = None  # CONFOUNDED's sentence: a side timed the figure from two starts (provision_starts)
    campaign_envs: frozenset[str] = frozenset()  # the environments its campaign's spec lists; empty: none stored

    @property
    def pair(self) -> tuple[str, str]:
        return self.baseline, self.candidate

    @property
    def id(self) -> str:
        return cell_id(self.campaign, self.cluster, self.node, self.test, self.params_key, self.metric)


_PARAMS = "starts_with(f, 'THREADS_MISMATCH') OR starts_with(f, 'PARAM_MISMATCH')"  # the parsers' flags
# fio's ROUNDED_RUNTIME (parsers/fio_flags.py): a whole-ms runtime makes the run's rates low, not its latencies, and
# only those of the directions its last words name (`directions so timed: read`; a flag without them: every one)
_ROUNDED = "regexp_matches(m.name, '_(iops|bw)$') AND len(list_filter(r.flags, lambda f: starts_with(f, " \
           f"'ROUNDED_RUNTIME: ') AND (NOT contains(f, '; {ROUNDED_DIRECTIONS}') OR list_contains(string_split(" \
           f"regexp_extract(f, '; {ROUNDED_DIRECTIONS}([a-z, ]+)$', 1), ', '), " \
           "regexp_extract(m.name, '(?:^|_)([a-z]+)_(?:iops|bw)$', 1))))) > 0"
_PHASE_MAX = "regexp_replace(m.name, '_(p50|p95|p99|max|min|avg)_ms$', '_max_ms')"  # P_p50_ms -> P_max_ms
# the run's flag (parsers/timeline.py) names this metric: LOWER_BOUND, the run's value is a lower bound;
# WATCH_GAP or RETRIED, an upper bound (end points a re-list saw after a dropped watch; a retry's wait held)
_NAMED = """list_contains(string_split(regexp_extract(
    list_filter(r.flags, lambda f: starts_with(f, '{flag}: '))[1], '^{flag}: ([^;]*);', 1), ', '), {metric})"""
_BOUND = _NAMED.format(flag="LOWER_BOUND", metric="m.name")
_GAP = _NAMED.format(flag="WATCH_GAP", metric="m.name")
_HELD = _NAMED.format(flag="RETRIED", metric="m.name")
# DuckDB 2.0.1 (review r7; `short` is a second scan of runs kept from before): an integer sum its statistics call
# never NULL (coalesce/ifnull/CASE around it, or a sum of NOT NULL values) grouped over a LEFT JOIN they prove empty
# (`imported` with no raw log imported) and ordered after is wrapped to a tiny integer by compressed_materialization:
# node-e's 240 s throttled read 0 (FILTER was not the cause). So each sum is cast inside its coalesce over a value
# that may be NULL, and the analyzer's connections (duckcon.py) run without that optimizer. A figure read from flags
# is 0 or NULL for a run without flags: `flagged` reads only runs with flags.
_KEY = "cluster, node, test, params_key, metric, env"
_FLAG_COUNTS = ("n_short", "n_rounded", "n_overlap", "n_emulated", "n_mismatch", "n_params", "n_lower_bound",
                "n_counted_given_up", "n_watch_gap", "n_held", "n_retried", "n_delete_refused")
_QUERY = f"""
WITH short AS (
    SELECT run_id, min(f) AS msg
    FROM (SELECT run_id, unnest(flags) AS f FROM runs WHERE campaign = $campaign AND status = 'ok')
    WHERE starts_with(f, 'SHORT')
    GROUP BY run_id
),
imported AS (SELECT run_id FROM raw_logs WHERE campaign = $campaign AND imported_from IS NOT NULL),
cells AS (
    SELECT r.cluster, r.node, r.test, r.params_key, m.name AS metric, r.env,
           any_value(m.unit) AS unit,
           list_sort(list(DISTINCT m.unit)) AS units,
           bool_or(m.higher_is_better) AS hib,
           list_sort(list(DISTINCT m.higher_is_better)) AS hibs,
           list(m.value ORDER BY r.started_at NULLS LAST, r.sequence, r.run_id) AS vals,
           list(DISTINCT {VERSION_SQL}) AS versions,
           {{archs}} AS tool_archs,
           count(*) FILTER (WHERE r.nr_throttled > 0) AS n_throttled,
           coalesce(sum(CASE WHEN r.nr_throttled > 0 THEN r.throttled_usec END)::BIGINT, 0) AS throttled_usec,
           list(DISTINCT coalesce(r.cpu_limit, -1.0)) AS cpu_limits,
           count(i.run_id) AS n_imported
    FROM runs r
    JOIN metrics m ON m.run_id = r.run_id
    LEFT JOIN imported i ON i.run_id = r.run_id
    WHERE r.campaign = $campaign AND r.status = 'ok' {{extra}}
    GROUP BY r.cluster, r.node, r.test, r.params_key, m.name, r.env
),
flagged AS (
    SELECT r.cluster, r.node, r.test, r.params_key, m.name AS metric, r.env,
           count(s.msg) AS n_short,
           min(s.msg) AS short_example,
           count(*) FILTER (WHERE {_ROUNDED}) AS n_rounded,
           min(list_filter(r.flags, lambda f: starts_with(f, 'ROUNDED_RUNTIME: '))[1]) FILTER (WHERE {_ROUNDED})
               AS rounded_example,
           count(*) FILTER (WHERE len(list_filter(r.flags, lambda f: starts_with(f, 'OVERLAP'))) > 0) AS n_overlap,
           min(list_filter(r.flags, lambda f: starts_with(f, 'OVERLAP'))[1]) AS overlap_example,
           count(*) FILTER (WHERE len(list_filter(r.flags, lambda f: starts_with(f, 'EMULATED'))) > 0) AS n_emulated,
           min(list_filter(r.flags, lambda f: starts_with(f, 'EMULATED'))[1]) AS emulated_example,
           count(*) FILTER (WHERE len(list_filter(r.flags, lambda f: starts_with(f, 'VERSION_MISMATCH'))) > 0)
               AS n_mismatch,
           min(list_filter(r.flags, lambda f: starts_with(f, 'VERSION_MISMATCH'))[1]) AS mismatch_example,
           count(*) FILTER (WHERE len(list_filter(r.flags, lambda f: {_PARAMS})) > 0) AS n_params,
           min(list_filter(r.flags, lambda f: {_PARAMS})[1]) AS params_example,
           count(*) FILTER (WHERE {_BOUND}) AS n_lower_bound,
           min(m.value) FILTER (WHERE {_BOUND}) AS least_bound,
           count(*) FILTER (WHERE {_NAMED.format(flag="LOWER_BOUND", metric=_PHASE_MAX)}) AS n_counted_given_up,
           count(*) FILTER (WHERE {_GAP}) AS n_watch_gap,
           count(*) FILTER (WHERE {_HELD}) AS n_held,
           count(*) FILTER (WHERE len(list_filter(r.flags, lambda f: starts_with(f, 'RETRIED: '))) > 0) AS n_retried,
           count(*) FILTER (WHERE len(list_filter(r.flags, lambda f: starts_with(f, 'DELETE_REFUSED: '))) > 0)
               AS n_delete_refused,
           max(m.value) FILTER (WHERE {_GAP} OR {_HELD}) AS greatest_gap
    FROM runs r
    JOIN metrics m ON m.run_id = r.run_id
    LEFT JOIN short s ON s.run_id = r.run_id
    WHERE r.campaign = $campaign AND r.status = 'ok' AND len(r.flags) > 0 {{extra}}
    GROUP BY r.cluster, r.node, r.test, r.params_key, m.name, r.env
)
SELECT c.*, {", ".join(f"coalesce(f.{n}, 0) AS {n}" for n in _FLAG_COUNTS)},
       f.short_example, f.rounded_example, f.overlap_example, f.emulated_example, f.mismatch_example, f.params_example,
       f.least_bound, f.greatest_gap
FROM cells c LEFT JOIN flagged f USING ({_KEY})
ORDER BY {_KEY}
"""


# A side's distinct known tool architectures (list_distinct leaves NULL out). A file made before 3a2d7335 has no
# runs.tool_arch until the analyzer opens it (schema.sql adds it), and `--db` reads a file read-only, as it is: its
# runs name no architecture, so each side is compared with none (flags.confounded), as runs of an older agent are.
_ARCHS = "list_distinct(list(DISTINCT r.tool_arch))"
_NO_ARCHS = "[]::VARCHAR[]"
_HAS_TOOL_ARCH = ("SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database() "
                  "AND schema_name = 'main' AND table_name = 'runs' AND column_name = 'tool_arch'")


def archs_sql(con: duckdb.DuckDBPyConnection) -> str:
    """The SQL of the distinct known runs.tool_arch of a group of runs r ([] in a file without the column, which
    `--db` reads as it is): load_cells and scores.node_scores."""
    row = con.execute(_HAS_TOOL_ARCH).fetchone()
    return _ARCHS if row and row[0] else _NO_ARCHS


def arch_sql(con: duckdb.DuckDBPyConnection) -> str:
    """The SQL of a run r's tool_arch (NULL in a file without the column): scores.node_scores' parts."""
    row = con.execute(_HAS_TOOL_ARCH).fetchone()
    return "r.tool_arch" if row and row[0] else "NULL::VARCHAR"


def _plain(v: Any) -> Any:
    if v is np.ma.masked:
        return None
    return v.item() if isinstance(v, np.generic) else v


def campaign_envs(con: duckdb.DuckDBPyConnection, campaign: str) -> frozenset[str]:
    """The environments the stored spec of ``campaign`` lists; empty when none is stored (runs imported, or sent
    without a submission): INSUFFICIENT then cannot tell a side the campaign never ran from one short of runs."""
    row = con.execute("SELECT spec FROM campaigns WHERE campaign = $c", {"c": campaign}).fetchone()
    envs = json.loads(row[0]).get("environments") if row else None
    return frozenset(str(e) for e in envs) if isinstance(envs, list) else frozenset()


def load_cells(
    con: duckdb.DuckDBPyConnection,
    campaign: str,
    *,
    node: str | None = None,
    test: str | None = None,
    params_key: str | None = None,
    cell: str | None = None,
    cluster: str | None = None,
) -> list[CellData]:
    """Every cell of ``campaign`` (optionally narrowed) with both sides, in a stable order."""
    extra, params = [], {"campaign": campaign}
    for col, val in (("r.cluster", cluster), ("r.node", node), ("r.test", test), ("r.params_key", params_key)):
        if val is not None:
            name = col.split(".")[1]
            extra.append(f"AND {col} = ${name}")
            params[name] = val
    failures = side_failures(con, extra, params)  # per side of a (node, test, params): before the metric's filter
    few = side_few(con, extra, params)  # a side without the metric has no row in the cells' query
    slow = side_slow(con, extra, params)
    envs = campaign_envs(con, campaign)
    if cell is not None:
        extra.append(f"AND {CELL_ID_SQL} = $cell")
        params["cell"] = cell
    res = con.execute(_QUERY.format(extra=" ".join(extra), archs=archs_sql(con)), params).fetchnumpy()
    cells: dict[tuple[str, ...], CellData] = {}
    sides_by_key: dict[tuple[str, ...], list[Side]] = {}
    for i in range(len(res["node"])):
        key = tuple(str(res[c][i]) for c in ("cluster", "node", "test", "params_key", "metric"))
        env = str(res["env"][i])
        limits = [None if x < 0 else float(x) for x in res["cpu_limits"][i]]
        side = Side(
            env=env,
            values=np.asarray(res["vals"][i], dtype=float),
            versions=sorted(str(v) for v in res["versions"][i]),
            tool_archs=sorted(str(v) for v in res["tool_archs"][i]),
            n_throttled=int(res["n_throttled"][i]),
            throttled_usec=int(res["throttled_usec"][i]),
            cpu_limits=limits,
            n_short=int(res["n_short"][i]),
            short_example=_plain(res["short_example"][i]),
            n_rounded=int(res["n_rounded"][i]),
            rounded_example=_plain(res["rounded_example"][i]),
            n_overlap=int(res["n_overlap"][i]),
            overlap_example=_plain(res["overlap_example"][i]),
            n_emulated=int(res["n_emulated"][i]),
            emulated_example=_plain(res["emulated_example"][i]),
            n_mismatch=int(res["n_mismatch"][i]),
            mismatch_example=_plain(res["mismatch_example"][i]),
            n_params=int(res["n_params"][i]),
            params_example=_plain(res["params_example"][i]),
            n_imported=int(res["n_imported"][i]),
            n_lower_bound=int(res["n_lower_bound"][i]),
            least_bound=_plain(res["least_bound"][i]),
            n_counted_given_up=int(res["n_counted_given_up"][i]),
            n_watch_gap=int(res["n_watch_gap"][i]),
            n_held=int(res["n_held"][i]),
            n_retried=int(res["n_retried"][i]),
            n_delete_refused=int(res["n_delete_refused"][i]),
            greatest_gap=_plain(res["greatest_gap"][i]),
            units=[str(u) for u in res["units"][i]],
            directions=[bool(d) for d in res["hibs"][i]],
        )
        if key not in cells:
            cells[key] = CellData(campaign, *key, unit=str(res["unit"][i]),
                                  higher_is_better=bool(res["hib"][i]),
                                  host=empty_side(HOST), pod=empty_side(POD))
        sides_by_key.setdefault(key, []).append(side)
    for key, found in sides_by_key.items():
        c = cells[key]
        c.baseline, c.candidate = sides_for(c.test, [s.env for s in found])
        c.host, c.pod = empty_side(c.baseline), empty_side(c.candidate)
        c.campaign_envs = envs
        for side in found:
            if side.env == c.baseline:
                c.host = side
            elif side.env == c.candidate:
                c.pod = side
        for side in (c.host, c.pod):
            side.failures = failures.get((*key[:4], side.env), side.failures)
            side.n_few, side.few_example = few.get((*key[:4], side.env, key[4]), (0, None))
            side.slow = slow.get((*key[:4], side.env, phase_of_metric(key[4]) or ""))
    return list(cells.values())
