"""A cell side's failed, left-behind and given-up objects and its FEW_OBSERVATIONS runs (celldata.load_cells): read
by their own queries, per side of a (cluster, node, test, params) before the cells' query narrows to a metric."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import duckdb
from podtax.flags import FEW_NAMED, FEW_RUN_FLAG


@dataclass
class Failures:
    """What the control-plane parser's run flags say of a side's runs of its (cluster, node, test, params),
    whatever the metric: a run with failed objects has no makespan or wall time, so it is missing from those
    cells (parsers/timeline.py). runs: the side's ok runs; error_runs: those flagged ERRORS, with ``failed``
    of their ``objects`` failed and one run's first failed object and what it lacked (``first_error``);
    left_runs: those flagged LEFT_BEHIND, with ``left`` objects not deleted. given_up: phase -> objects given up
    while waiting in it, counted in its percentiles at the time they were given up (the phases table's
    lower_bound rows)."""

    runs: int = 0
    error_runs: int = 0
    failed: int = 0
    objects: int = 0
    first_error: str | None = None
    left_runs: int = 0
    left: int = 0
    given_up: dict[str, int] = field(default_factory=dict)

    @property
    def total_objects(self) -> int:
        """Objects of all the side's runs: a cell's runs share their params, so each asked for as many."""
        per_run = self.objects / self.error_runs if self.error_runs else 0
        return self.objects + round((self.runs - self.error_runs) * per_run)


_OBJECTS_FAILED = r"^ERRORS: (\d+) of (\d+) objects failed"  # parsers/timeline.py (other tools' ERRORS differ)
_FAILURES_QUERY = f"""
SELECT cluster, node, test, params_key, env, count(*), count(e),
       coalesce(sum(TRY_CAST(regexp_extract(e, '{_OBJECTS_FAILED}', 1) AS BIGINT))::BIGINT, 0),
       coalesce(sum(TRY_CAST(regexp_extract(e, '{_OBJECTS_FAILED}', 2) AS BIGINT))::BIGINT, 0),
       min(nullif(regexp_extract(e, '\\(first: (.*)\\); the run', 1), '')),
       count(l), coalesce(sum(TRY_CAST(regexp_extract(l, '^LEFT_BEHIND: (\\d+)', 1) AS BIGINT))::BIGINT, 0)
FROM (SELECT cluster, node, test, params_key, env,
             list_filter(flags, lambda f: regexp_matches(f, '{_OBJECTS_FAILED}'))[1] AS e,
             list_filter(flags, lambda f: starts_with(f, 'LEFT_BEHIND:'))[1] AS l
      FROM runs r WHERE r.campaign = $campaign AND r.status = 'ok' {{extra}})
GROUP BY ALL HAVING count(e) > 0 OR count(l) > 0
"""


_GIVEN_UP_QUERY = """
SELECT r.cluster, r.node, r.test, r.params_key, r.env, p.phase, count(*)
FROM phases p JOIN runs r ON r.run_id = p.run_id
WHERE p.lower_bound AND r.campaign = $campaign AND r.status = 'ok' {extra}
GROUP BY ALL
"""


# the metrics a run's FEW_OBSERVATIONS flag names (`... too few for rtt_p99_us, rtt_p99_9_us (a percentile ...`)
_FEW_QUERY = f"""
SELECT cluster, node, test, params_key, env, name, count(*), min(f)
FROM (SELECT *, unnest(string_split(regexp_extract(f, '{FEW_NAMED}', 1), ', ')) AS name
      FROM (SELECT cluster, node, test, params_key, env,
                   list_filter(flags, lambda f: starts_with(f, '{FEW_RUN_FLAG}'))[1] AS f
            FROM runs r WHERE r.campaign = $campaign AND r.status = 'ok' {{extra}})
      WHERE f IS NOT NULL)
GROUP BY ALL
"""


def side_few(con: duckdb.DuckDBPyConnection, extra: list[str], params: dict) -> dict[tuple[str, ...], tuple[int, str]]:
    """(cluster, node, test, params_key, env, metric) -> (runs whose FEW_OBSERVATIONS flag names the metric, one
    such flag)."""
    rows = con.execute(_FEW_QUERY.format(extra=" ".join(extra)), params).fetchall()
    return {tuple(r[:6]): (r[6], r[7]) for r in rows}


def side_failures(con: duckdb.DuckDBPyConnection, extra: list[str], params: dict) -> dict[tuple[str, ...], Failures]:
    """(cluster, node, test, params_key, env) -> Failures, for the sides with a run flagged ERRORS or LEFT_BEHIND."""
    rows = con.execute(_FAILURES_QUERY.format(extra=" ".join(extra)), params).fetchall()
    out = {tuple(r[:5]): Failures(r[5], r[6], r[7], r[8], r[9] or None, r[10], r[11]) for r in rows}
    for *key, phase, n in con.execute(_GIVEN_UP_QUERY.format(extra=" ".join(extra)), params).fetchall():
        if tuple(key) in out:
            out[tuple(key)].given_up[phase] = n
    return out


SLOW_TIMES = 10.0  # an object slower than this many times its side's median of the phase ...
SLOW_MORE_S = 1.0  # ... and this many seconds more is a slow object (a stuck provisioner's retries, not jitter)
NEAR_TIMES = 4.0  # objects between this many times the median and slow: a continuous tail's, not a few stuck ones
FAR_TIMES = (20.0, 30.0, 50.0)  # further limits (x the median, and SLOW_MORE_S more) counted beside SLOW_TIMES
FALSE_ALARM = 1e-4  # the chance that the side's own spread puts as many objects past a limit, over all its limits
SHIFT = 0.9  # the fit is of the times less this much of the side's least time (a floor: a round trip, a fixed wait)
MIN_SPREAD = 0.5  # the least log spread (lognormal sigma) the fit takes: a narrow fit predicts no object past 10x
_Z90 = 1.2815516  # the standard normal's 90th percentile


@dataclass
class SlowObjects:
    """A side's objects of one phase, pooled over its ok runs, that took over SLOW_TIMES x the side's median and
    SLOW_MORE_S more (objects given up while waiting are ERRORS', and those seen late by a re-list WATCH_GAP's: not
    counted slow): ``slow`` of ``objects``, in ``slow_runs`` of ``runs``; ``median_s`` the side's median of the
    phase, ``slowest_s`` the slowest one; ``per_run`` (objects, slow) of each run that had one; ``near`` the
    objects over NEAR_TIMES x the median but not slow (a long tail has many: lognormal sigma 1, 7 for each slow);
    ``q90_s`` the side's 90th percentile of the phase, ``least_s`` its least time, ``far`` the objects over each
    FAR_TIMES limit."""

    objects: int
    slow: int
    runs: int
    slow_runs: int
    median_s: float
    slowest_s: float
    near: int = 0
    per_run: list[tuple[int, int]] = field(default_factory=list)
    q90_s: float = 0.0
    least_s: float = 0.0
    far: list[int] = field(default_factory=lambda: [0] * len(FAR_TIMES))


def poisson_at_least(k: int, mean: float) -> float:
    """P(X >= k) for X Poisson with this mean; 1.0 when k is not over the mean (about a half or more: no alarm).
    Summed in logs from k up, so a mean of thousands neither underflows nor loops over every count below k."""
    if k <= mean:
        return 1.0
    if mean <= 0:
        return 0.0
    log_term = k * math.log(mean) - mean - math.lgamma(k + 1)
    total, term, i = 0.0, 1.0, k
    while term > 1e-12 * total or not total:
        total += term
        i += 1
        term *= mean / i
    return min(1.0, math.exp(log_term) * total)


def beyond_spread(slow: SlowObjects) -> bool:
    """Whether more objects lie past SLOW_TIMES (or a FAR_TIMES) x the median than the side's own spread predicts:
    a lognormal fitted to its median and 90th percentile less SHIFT x its least time (a floor under every object,
    a round trip or a fixed wait, is no part of the spread), its log spread widened by 2/sqrt(objects) (about 1.5
    standard errors of that estimate, 1.37/sqrt(objects)) and at least MIN_SPREAD; Poisson counts, FALSE_ALARM in
    all. A wide spread (sigma 0.7-1.5) puts objects past 10x by itself; 1 or 2 stuck of 100 a run still stand out
    against what it predicts (review of the stand-apart rule: those were missed). The floor and the least spread
    (review r7): a floor of 0.3 s under lognormal(0.1 s, sigma 1.5), or a Pareto tail (alpha 1.5, 2), fitted as a
    lognormal from 0 predicted too few past 10x (109, 141, 67 of 200 campaigns with nothing stuck flagged); a fit
    with the 90th percentile at the median predicted none, so one object past a limit was an alarm: such a side has
    no spread to fit, and a narrow fit takes MIN_SPREAD. Narrower sides' stuck objects stand apart (slow_objects'
    first test). Not for a polled side (object_flags: its end points lie on the poll grid, a spread no lognormal
    fits)."""
    n, med = slow.objects, slow.median_s
    if n <= 0 or med <= 0 or slow.q90_s <= med:  # no spread to fit: the tail is all over the 90th percentile
        return False
    floor = SHIFT * min(slow.least_s, med)
    spread = max(MIN_SPREAD, math.log((slow.q90_s - floor) / (med - floor)) / _Z90 * (1 + 2 / math.sqrt(n)))
    for times, k in zip((SLOW_TIMES, *FAR_TIMES), (slow.slow, *slow.far), strict=True):
        z = math.log((max(times * med, med + SLOW_MORE_S) - floor) / (med - floor)) / spread
        if k and poisson_at_least(k, n * 0.5 * math.erfc(z / math.sqrt(2))) < FALSE_ALARM / (1 + len(FAR_TIMES)):
            return True
    return False


# A slow object is over the median and SLOW_MORE_S more: the sides' medians (grouped, not a window over every row)
# of just the sides with a row over SLOW_MORE_S, only those rows joined to them, and the near ones, the runs' object
# counts, 90th percentiles and least times of just the sides and runs that had a slow one (a phase whose every
# object took over a second, none slow, costs only its median). p is not materialized: each use reads what it needs.
_SLOW = f"latency_s > {SLOW_TIMES} * med AND latency_s > med + {SLOW_MORE_S}"
_SIDE = "cluster, node, test, params_key, env, phase"
_FAR = "[" + ", ".join(f"count(*) FILTER (WHERE latency_s > {t} * med AND latency_s > med + {SLOW_MORE_S})"
                       for t in FAR_TIMES) + "] AS far"
_SLOW_QUERY = f"""
WITH p AS NOT MATERIALIZED (
    SELECT r.cluster, r.node, r.test, r.params_key, r.env, p.phase, p.run_id, p.latency_s,
           p.lower_bound OR {{late}} AS bound
    FROM phases p JOIN runs r ON r.run_id = p.run_id
    WHERE r.campaign = $campaign AND r.status = 'ok' {{extra}}),
c AS (SELECT DISTINCT {_SIDE} FROM p WHERE latency_s > {SLOW_MORE_S} AND NOT bound),
m AS (SELECT {_SIDE}, median(latency_s) AS med, count(*) AS objects, count(DISTINCT run_id) AS runs
      FROM p JOIN c USING ({_SIDE}) GROUP BY ALL),
s AS (SELECT {_SIDE}, run_id, count(*) AS slow, max(latency_s) AS slowest, {_FAR}
      FROM (SELECT * FROM p WHERE latency_s > {SLOW_MORE_S} AND NOT bound) JOIN m USING ({_SIDE})
      WHERE {_SLOW} GROUP BY ALL),
near AS (SELECT {_SIDE}, quantile_cont(latency_s, 0.9) AS q90, min(latency_s) AS least,
                count(*) FILTER (WHERE NOT bound AND latency_s > {NEAR_TIMES} * med AND NOT ({_SLOW})) AS near
         FROM p JOIN m USING ({_SIDE}) JOIN (SELECT DISTINCT {_SIDE} FROM s) USING ({_SIDE}) GROUP BY ALL),
n AS (SELECT run_id, phase, count(*) AS n FROM phases WHERE run_id IN (SELECT run_id FROM s) GROUP BY ALL)
SELECT {_SIDE}, m.objects, m.runs, m.med, near.q90, near.least, near.near, n.n, s.slow, s.slowest, s.far
FROM s JOIN m USING ({_SIDE}) JOIN n USING (run_id, phase) JOIN near USING ({_SIDE})
ORDER BY ALL
"""


def side_slow(con: duckdb.DuckDBPyConnection, extra: list[str], params: dict) -> dict[tuple[str, ...], SlowObjects]:
    """(cluster, node, test, params_key, env, phase) -> SlowObjects, for the sides and phases that have one. A file
    written before the upper_bound column, read without migrating it (`podtax report --db`), has none."""
    late = "p.upper_bound" if con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_name = 'phases' AND column_name = 'upper_bound'"
    ).fetchone()[0] else "false"
    out: dict[tuple[str, ...], SlowObjects] = {}
    query = _SLOW_QUERY.format(extra=" ".join(extra), late=late)
    for *key, objects, runs, med, q90, least, near, n, slow, slowest, far in con.execute(query, params).fetchall():
        got = out.setdefault(tuple(key), SlowObjects(objects, 0, runs, 0, med, 0.0, near, q90_s=q90, least_s=least))
        got.slow, got.slow_runs, got.slowest_s = got.slow + slow, got.slow_runs + 1, max(got.slowest_s, slowest)
        got.far = [a + b for a, b in zip(got.far, far, strict=True)]
        got.per_run.append((n, slow))
    return out
