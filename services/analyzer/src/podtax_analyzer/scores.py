"""Node scores for the scheduler: per (cluster, node, env, test, params, metric), per run, never a sum.

median and mean are of the per-run values (metric unit); n is the number of successful runs; the
95% interval of the median is distribution-free (order statistics at binomial(n, 1/2) ranks,
coverage >= 95%, None below 6 runs where no such interval exists: the scheduler then assumes a default
noise band, its no_interval_noise); updated_at is the newest run's
end time (its stored time when the end is unknown). Scores span every campaign: a node's score is
what it has shown so far, whichever campaign measured it.

flags say why the runs should not drive placement (the scheduler ignores such evidence and says
so): CONFOUNDED (more than one tool build among them, tool executables built for more than one architecture among the
runs that name one (runs.tool_arch: a 32-bit armhf sysbench on some runs, the arm64 one on others), or the metric in
more than one unit or direction: a parser that changed it), BIMODAL (stats.modes.check_unimodality, as in the
comparison: from 6 runs, the gap rule alone below 10; not over two units, which CONFOUNDED says), OVERLAP (a run
carries an OVERLAP flag), THROTTLED (a pod run was throttled by its CPU limit), EMULATED (a run's tool executable was
built for another architecture than its kernel runs natively: an x86_64 sysbench through qemu-user on an arm64 node,
which measures the emulator; the run flag store_rows.emulated_flag, set when a result is stored: runs stored before
it get it from `podtax reparse`).

A run whose log did other work than its params (PARAM_MISMATCH, THREADS_MISMATCH: bs=64k under a
bs=4k key) or stopped early (SHORT) is not counted at all (`COUNTED`): it measured another cell, and
the report withholds that cell's verdict for the same reason. Nor is a run started before the time from which the
user retired its node's older runs (`podtax retire`, retired.py: a node changed, a hardware change, a kernel upgrade):
kept for reports and comparisons, left out of every score of that node.

tool_archs: the distinct architectures its runs' tool executables were built for, among the runs that name one (an
older wrapper or agent names none, and a file made before runs.tool_arch has none); two or more: CONFOUNDED. The
scheduler ranks nothing for a pod whose candidates' scores name different ones (scoring.py, BenchmarkMixedArch).

A node that switched tool builds cleanly (every run of the older builds ended before the first run of the newest, a
build naming an architecture, of at least build_switch.MIN_KEPT runs) is scored by the newest build's runs alone (with
its version's runs naming no architecture since its first), and left_out says what was left (build_switch.py): every
figure and flag above is then of those runs. Builds whose runs interleave are all counted: CONFOUNDED, as are those of
a newest build of fewer runs (a trial). No run is deleted.
"""

from __future__ import annotations

import logging
import math
import traceback
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import numpy as np
from podtax.events import LeftOutRuns, NodeScore

from podtax_analyzer.build_switch import Part, kept
from podtax_analyzer.celldata import VERSION_SQL, arch_sql
from podtax_analyzer.stats.modes import check_unimodality

log = logging.getLogger("podtax.analyzer.scores")
SAFE_SUM = 2.0**1000  # n * max|value| below this: no order of summing the values overflows (max ~2**1024)
ENVS = ("host", "kubernetes")
# The runs a score counts (runs r): successful, host or pod, and not flagged by the parser as having
# measured another cell or less work than asked (the module doc).
# A run started before the time the user retired its node's older runs from (table retired, retired.py) is not counted.
# A scalar subquery: as NOT EXISTS (SELECT ... WHERE run time < before_time), node_scores took 1.6x as long at 200,000
# runs of 4 metrics, the table empty (0.61 s against 0.38 without the clause); this way 0.44 s against 0.45, a
# ScoreCache restore 1.06 s against 0.94, a publication's reads of 1,000 new runs 38 ms against 29 (medians).
RUN_TIME = "coalesce(r.started_at, r.ended_at, r.stored_at)"
RETIRED = (f"{RUN_TIME} >= coalesce((SELECT max(t.before_time) FROM retired t WHERE t.cluster = r.cluster "
           "AND t.node = r.node), TIMESTAMPTZ '-infinity')")
# ELIGIBLE: those a score counts but for a retirement (retired.py counts, per score, those it leaves out).
ELIGIBLE = ("r.status = 'ok' AND r.env IN ('host', 'kubernetes') AND coalesce(len(list_filter(r.flags, lambda f: "
            "starts_with(f, 'PARAM_MISMATCH') OR starts_with(f, 'THREADS_MISMATCH') OR starts_with(f, 'SHORT'))), "
            "0) = 0")
COUNTED = f"{ELIGIBLE} AND {RETIRED}"
# A run whose tool executable ran through an emulator (store_rows.emulated_flag): counted, and its score flagged.
EMULATED = "coalesce(len(list_filter(r.flags, lambda f: starts_with(f, 'EMULATED'))) > 0, false)"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MIN_RUNS_CI = 6
RANK_EXACT_BELOW = 2000  # runs: below, the rank is computed in exact integers; from here in floats
T = TypeVar("T")


@lru_cache(maxsize=4096)
def _rank(n: int, confidence: float) -> int:
    """1-based rank of the lower bound: binom.ppf((1 - confidence) / 2, n, 1/2) (at least 1), i.e. the
    smallest k whose binomial(n, 1/2) CDF reaches that level, in exact integers below RANK_EXACT_BELOW
    runs, else in floats (_rank_float) (scipy.stats, ~70 MB of imports, gave the same ranks:
    tests/analysis/test_score_cache.py). Cached: n repeats a lot."""
    return _rank_float(n, confidence) if n >= RANK_EXACT_BELOW else _rank_exact(n, confidence)


def _rank_exact(n: int, confidence: float) -> int:
    """_rank in exact integers."""
    target = Fraction((1.0 - confidence) / 2.0) * 2**n  # the level, in units of 2**-n
    total, term = 0, 1  # sum of C(n, i) for i <= k; C(n, k)
    for k in range(n + 1):
        total += term
        if total >= target:
            return max(1, k)
        term = term * (n - k) // (k + 1)
    return n


def _rank_float(n: int, confidence: float) -> int:
    """_rank in floats: the exact sum's integers have n bits and it adds about n/2 of them, O(n^2) bit
    operations (1.2 s at 100,000 runs, paid at each count not seen before, i.e. most publications of a
    long key). Here the sum starts 12 standard deviations below the mean, where the binomial tail left
    out is under e**-72 (Hoeffding), with its first term from lgamma, and adds ~12 sd terms by the
    recurrence: relative error ~1e-10, which moves the rank only if the level falls that close to a
    CDF step (the same ranks as exact integers for every n tested, test_score_cache.py)."""
    target = (1.0 - confidence) / 2.0
    k = max(0, math.floor(n / 2 - 6 * math.sqrt(n)))  # 12 sd below n/2 (sd = sqrt(n) / 2)
    term = math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0))
    total = 0.0
    while k < n:
        total += term
        if total >= target:
            return max(1, k)
        term = term * (n - k) / (k + 1)
        k += 1
    return n


def median_interval(sorted_x: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free interval of the median from order statistics; None when n < 6."""
    n = len(sorted_x)
    if n < MIN_RUNS_CI:
        return None
    j = _rank(n, confidence)
    return float(sorted_x[j - 1]), float(sorted_x[n - j])


def sorted_median(sorted_x: Sequence[float]) -> float:
    """Median of already sorted values (the same figure as numpy.median, without an array)."""
    mid = len(sorted_x) // 2
    return float(sorted_x[mid]) if len(sorted_x) % 2 else (float(sorted_x[mid - 1]) + float(sorted_x[mid])) / 2.0


# One row per key and tool build (its parts: build_switch.py)
_QUERY = """
WITH touched AS ({touched})
SELECT r.cluster, r.node, r.env, r.test, r.params_key, m.name AS metric, {version} AS build, {arch} AS arch,
       list(DISTINCT m.unit) AS units, list(DISTINCT m.higher_is_better) AS hibs,
       list(m.value ORDER BY m.value) AS vals,
       epoch_us(min(coalesce(r.ended_at, r.stored_at))) AS first_us,
       epoch_us(max(coalesce(r.ended_at, r.stored_at))) AS last_us,
       count(*) FILTER (WHERE r.nr_throttled > 0) AS throttled,
       count(*) FILTER (WHERE len(list_filter(r.flags, lambda f: starts_with(f, 'OVERLAP'))) > 0) AS overlap,
       count(*) FILTER (WHERE {emulated}) AS emulated
FROM runs r JOIN metrics m ON m.run_id = r.run_id
WHERE {counted} {where}
  AND (NOT $narrow OR (r.cluster, r.node, r.env, r.test, r.params_key, m.name) IN (SELECT * FROM touched))
GROUP BY r.cluster, r.node, r.env, r.test, r.params_key, m.name, build, arch
ORDER BY r.cluster, r.node, r.env, r.test, r.params_key, m.name, build, arch
"""
_TOUCHED = """SELECT DISTINCT r.cluster, r.node, r.env, r.test, r.params_key, m.name
              FROM runs r JOIN metrics m ON m.run_id = r.run_id
              WHERE {counted} AND r.run_id IN (SELECT unnest($ids::varchar[]))"""


def node_scores(
    con: duckdb.DuckDBPyConnection,
    *,
    cluster: str | None = None,
    since_runs: Iterable[str] | None = None,
    node: str | None = None,
    test: str | None = None,
    env: str | None = None,
    unscored: list[tuple[str, ...]] | None = None,
    level: int = logging.ERROR,
) -> list[NodeScore]:
    """Every node score, optionally only the keys touched by the runs ``since_runs`` and/or filtered by
    cluster, node, test, env. The service publishes the same figures from score_cache.ScoreCache,
    which reads only the new runs' rows; its tests hold it to this function. A key whose statistics raise
    has no score: it is said at `level` (say_unscored) and appended to `unscored` (cluster, node, env, test,
    params_key, metric) when given, so the sweep (score_sweep.py) keeps its last published score."""
    params: dict = {"ids": [], "narrow": since_runs is not None}
    if since_runs is not None:
        params["ids"] = list(since_runs)
        if not params["ids"]:
            return []
    where = []
    for col, val in (("cluster", cluster), ("node", node), ("test", test), ("env", env)):
        if val is not None:
            where.append(f"AND r.{col} = ${col}")
            params[col] = val
    # Fetched as numpy (each key's values one float64 array, not a list of Python floats). This reads
    # every stored run of the selected keys; the service's publications use score_cache.py instead.
    res = con.execute(_QUERY.format(touched=_TOUCHED.format(counted=COUNTED), where=" ".join(where),
                                    version=VERSION_SQL, counted=COUNTED, arch=arch_sql(con),
                                    emulated=EMULATED),
                      params).fetchnumpy()
    keyed: dict[tuple[str, ...], list[Part]] = {}  # in key order (the query's)
    for i in range(len(res["vals"])):
        key = tuple(str(res[c][i]) for c in ("cluster", "node", "env", "test", "params_key", "metric"))
        arch = res["arch"][i]
        keyed.setdefault(key, []).append(Part(
            build=str(res["build"][i]), arch=None if arch is None or arch is np.ma.masked else str(arch),
            vals=res["vals"][i], first_us=int(res["first_us"][i]), last_us=int(res["last_us"][i]),
            units={str(u) for u in res["units"][i]}, directions={bool(h) for h in res["hibs"][i]},
            throttled=int(res["throttled"][i]), overlap=int(res["overlap"][i]),
            emulated=int(res["emulated"][i])))
    scores = []
    for key, parts in keyed.items():
        # one key whose statistics raise has no score; every other key still gets its own
        score, exc = isolated(_score_parts, key, parts)
        if exc is not None:  # a statistic's bug on one key's values (said, see say_unscored)
            say_unscored(key, exc, level)
            if unscored is not None:
                unscored.append(key)
            continue
        if score is not None:
            scores.append(score)
    return scores


def key_args(key: Sequence[str]) -> dict[str, str]:
    """score_from_sorted's arguments naming a key (cluster, node, env, test, params_key, metric)."""
    return dict(zip(("cluster", "node", "env", "test", "params_key", "metric"), key, strict=True))


def parts_args(parts: Sequence[Part]) -> dict[str, Any]:
    """score_from_sorted's arguments from a key's runs, one Part per tool build: of the newest build's runs alone
    after a clean switch (build_switch.kept, then `left_out` says what was left), else of every run. node_scores
    and the service's ScoreCache both score this way, so both give the same figures."""
    counted, left_out = kept(sorted(parts, key=lambda p: (p.build, p.arch or "")))
    # merged: numpy's stable sort (timsort) of sorted runs merges them, 5x faster than np.insert at 6,700 values
    vals = counted[0].vals if len(counted) == 1 else np.sort(np.concatenate([p.vals for p in counted]), kind="stable")
    totals = [p.total for p in counted]
    units: set[str] = set().union(*(p.units for p in counted))
    directions: set[bool] = set().union(*(p.directions for p in counted))
    return {"unit": min(units), "higher_is_better": True in directions, "vals": vals,
            "updated_us": max(p.last_us for p in counted), "builds": len({p.build for p in counted}),
            "units": len(units), "directions": len(directions), "throttled": sum(p.throttled for p in counted),
            "overlap": sum(p.overlap for p in counted), "emulated": sum(p.emulated for p in counted),
            "tool_archs": [p.arch for p in counted if p.arch],
            "mean": mean_from_sum([x for t in totals for x in t], vals) if None not in totals else None,
            "left_out": left_out}


def _score_parts(key: Sequence[str], parts: Sequence[Part]) -> NodeScore | None:
    return score_from_sorted(**key_args(key), **parts_args(parts))


def isolated(score: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T | None, Exception | None]:
    """(score(*args, **kwargs), None), or (None, the exception) when one key's statistics raise: the caller leaves
    that key out and says it (say_unscored), and every other key still gets its own score (node_scores, and the
    service's ScoreCache._scored). MemoryError and RecursionError are no bug of the key's: they are raised, so the
    whole computation fails and is tried again (a publication, with its runs)."""
    try:
        return score(*args, **kwargs), None
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - a statistic's bug on one key's values must not stop the others
        return None, exc


def say_unscored(key: Sequence[str], exc: BaseException, level: int = logging.ERROR) -> None:
    """One line (an error unless `level`): the key (cluster, node, env, test, params, metric) has no score because its
    statistics raised `exc` (a statistic's bug on its values, e.g. a division by a spread that underflowed to 0,
    6dde9462). No new figure of it is published (the scores bucket keeps its last published one: the sweep spares
    it); the other keys are scored and published; it is scored again when its runs change. Before, one such key made
    every publication fail whole, and since its runs were retried with the next ones, no score of any key was
    published again. MemoryError and RecursionError are not a key's: they still fail the whole computation."""
    cluster, node, env, test, params_key, metric = key
    frames = traceback.extract_tb(exc.__traceback__)
    at = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    log.log(level, "no score for cluster=%s node=%s env=%s test=%s params=%s metric=%s: its statistics raised %s: "
            "%s%s; left out (the scores bucket keeps its last published score), the other keys' scores are "
            "published; tried again when its runs change",
            cluster, node, env, test, params_key, metric, type(exc).__name__, exc, at)


def score_from_sorted(*, cluster: str, node: str, env: str, test: str, params_key: str, metric: str, unit: str,
                      higher_is_better: bool, vals: np.ndarray, updated_us: int, builds: int, units: int,
                      throttled: int, overlap: int, mean: float | None = None,
                      directions: int = 1, tool_archs: Iterable[str] = (),
                      left_out: LeftOutRuns | None = None, emulated: int = 0) -> NodeScore | None:
    """One key's score from its runs' values (sorted ascending) and facts; shared by node_scores and the
    service's incremental cache (score_cache.py), so both give the same figures. `mean`: exact_mean(vals)
    when the caller has it (the cache, from its running sum: mean_from_sum), else computed here. None when
    the values are so extreme (near the float maximum, from a forged or misparsed result) that their median
    or mean is not a finite number: that key has no score, and every other key still gets its own.
    tool_archs: the architectures of its runs' tool executables (those that name one; any order). left_out: the
    runs of older tool builds not counted (parts_args). emulated: how many runs ran through an emulator."""
    median = sorted_median(vals)
    mean = exact_mean(vals) if mean is None else mean
    if not (math.isfinite(median) and math.isfinite(mean)):
        log.warning("no score for %s %s %s %s %s %s: the median or mean of its %d values is not finite",
                    cluster, node, env, test, params_key, metric, len(vals))
        return None
    ci = median_interval(vals)
    archs = sorted(set(tool_archs))
    return NodeScore(cluster=cluster, node=node, env=env, test=test, params_key=params_key, metric=metric, unit=unit,
                     higher_is_better=higher_is_better, median=median, mean=mean,
                     n=len(vals), ci_low=ci[0] if ci else None, ci_high=ci[1] if ci else None,
                     updated_at=EPOCH + timedelta(microseconds=updated_us),
                     flags=score_flags(vals, builds, throttled, overlap, units, directions, len(archs), emulated),
                     tool_archs=archs, left_out=left_out)


def exact_mean(vals: np.ndarray) -> float:
    """The mean from the correctly rounded sum (math.fsum): the same figure whatever the order of the
    values, so a full recompute and an incremental one agree to the last bit (DuckDB's parallel avg
    may differ in its last bits from run to run)."""
    try:
        return math.fsum(vals.tolist()) / len(vals)
    except OverflowError:  # the sum of values near the float maximum is not a float
        return math.inf


def add_exact(partials: list[float] | None, values: Iterable[float]) -> list[float] | None:
    """A running exact sum: floats whose exact sum is that of `partials` and `values`, each the correctly
    rounded remainder of the ones before (math.fsum), so they do not overlap and math.fsum of them is the
    correctly rounded sum of every value ever added, in any order: the figure math.fsum gives over all of
    them. A key's sum is kept this way and updated from its new values only. None (and None from then on)
    when a sum overflows or a value is not finite: mean_from_sum then sums the values themselves."""
    if partials is None:
        return None
    terms, out = [*partials, *values], []
    try:
        while rest := math.fsum(terms):  # at most ~40 rounds (2,100 bits of range over 53 a float), often 1-2
            if not math.isfinite(rest):
                return None
            out.append(rest)
            terms.append(-rest)
    except (OverflowError, ValueError):  # an intermediate sum of values near the float maximum; inf - inf
        return None
    return out


def mean_from_sum(partials: list[float] | None, vals: np.ndarray) -> float:
    """exact_mean(vals) (vals sorted ascending, at least one) from their running sum (add_exact), without
    a pass over the values: the same correctly rounded sum. The values are summed as exact_mean does
    when that sum is unknown, when values this large (n * max|value| from SAFE_SUM) could make one order
    of summing them overflow where another does not, or when they cancel out (a zero sum: 0.0 by IEEE
    rounding, but when every value is a zero, math.fsum's sign of zero, from a zero of each sign present)."""
    if partials is None or len(vals) * max(abs(float(vals[0])), abs(float(vals[-1]))) >= SAFE_SUM:
        return exact_mean(vals)
    if partials:
        return math.fsum(partials) / len(vals)
    if vals[0] == vals[-1] == 0:  # sorted: every value is a zero (a count of errors, say)
        negative = np.signbit(vals)
        return math.fsum([-0.0] * bool(negative.any()) + [0.0] * bool(not negative.all())) / len(vals)
    return exact_mean(vals)


def score_flags(vals: Sequence[float], builds: int, throttled: int, overlap: int, units: int = 1,
                directions: int = 1, archs: int = 0, emulated: int = 0) -> list[str]:
    """The flags of one node score (see the module doc), in a fixed order; vals sorted ascending; units: how
    many distinct units its runs gave the metric in; directions: how many higher-is-better they said; archs: how
    many architectures their tool executables were built for (among the runs that name one); emulated: how many runs'
    executables ran through an emulator."""
    flags = []
    if builds > 1 or units > 1 or directions > 1 or archs > 1:
        flags.append("CONFOUNDED")
    x = np.asarray(vals, dtype=float)
    # from the floor cell_analysis uses (it refuses fewer runs); values in two units have no shape on one scale
    if units < 2 and check_unimodality(x, sorted_x=x).bimodal:
        flags.append("BIMODAL")
    if overlap:
        flags.append("OVERLAP")
    if throttled:
        flags.append("THROTTLED")
    if emulated:
        flags.append("EMULATED")
    return flags
