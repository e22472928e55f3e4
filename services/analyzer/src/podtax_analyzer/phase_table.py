"""The control-plane phase table: per phase, the two backends side by side with the pod tax's machinery.

Built from a campaign's comparison (comparisons.compare_campaign): for every control-plane cell
(volume-churn, pod-startup) and every phase of podtax.phases, one row for the runs' median per-object
latency (``P_p50_ms``) and one for the phase's makespan (``P_makespan_s``), each with both sides'
medians over runs, the ratio candidate / baseline with its 95% interval, the verdict and the flags.
Each row carries the phase's definition; a phase one backend does not have (Nomad has no Bound
phase) gets a row that says so instead of a ratio. Per-object latencies are in the phases table.
"""

from __future__ import annotations

from typing import Literal

import duckdb
from podtax import phases as ph
from podtax.parsers.timeline import rank_rests_on_bound
from podtax.templates import parse_params
from pydantic import BaseModel, Field

from podtax_analyzer.provision_starts import Starts, said
from podtax_analyzer.reads import Cursor
from podtax_analyzer.report_models import CampaignReport, CellComparison
from podtax_analyzer.rowstream import BATCH, Batches, batches

STATISTICS: tuple[tuple[str, str], ...] = (("p50", "_p50_ms"), ("makespan", "_makespan_s"))
ONE_SIDE = "one side only: compare two campaigns with `podtax compare`"


class PooledSide(BaseModel):
    objects: int = Field(description="Objects of the side's successful runs that have the phase.")
    p50_ms: float = Field(description="Median per-object latency over all those objects (ms).")
    p99_ms: float = Field(description="99th percentile over all those objects (ms), linear interpolation.")
    p50_lower_bound: bool = Field(False, description="p50_ms rests on objects given up while waiting, counted at the "
                                                     "time they were given up (the phases table's lower_bound rows): "
                                                     "a lower bound, shown as \"≥ value\".")
    p99_lower_bound: bool = Field(False, description="p99_ms is a lower bound, as p50_lower_bound.")
    p50_upper_bound: bool = Field(False, description="p50_ms rests on objects whose end was seen only by a re-list "
                                                     "after a dropped watch, or held a retry's wait (the phases "
                                                     "table's upper_bound rows): "
                                                     "an upper bound, shown as \"≤ value\".")
    p99_upper_bound: bool = Field(False, description="p99_ms is an upper bound, as p50_upper_bound.")
    min_ms: float = Field(description="The least latency over all those objects (ms).")
    avg_ms: float = Field(description="The mean latency over all those objects (ms), those given up counted at the "
                                      "time they were given up.")
    min_lower_bound: bool = Field(False, description="min_ms is a lower bound: no completed object's time lies "
                                                     "below the least given up.")
    avg_lower_bound: bool = Field(False, description="avg_ms is a lower bound: it counts an object given up.")
    min_upper_bound: bool = Field(False, description="min_ms is an upper bound, as p50_upper_bound.")
    avg_upper_bound: bool = Field(False, description="avg_ms is an upper bound: it counts a time seen late or "
                                                     "holding a retry's wait.")


class PhaseRow(BaseModel):
    cluster: str
    node: str
    test: str
    params: str
    phase: str
    definition: str = Field(description="From which end point to which, per backend where they differ.")
    definitions: dict[str, str] = Field(description="Side -> the phase's definition there (or why it has none).")
    statistic: Literal["p50", "makespan", "objects"] = Field(
        description="p50: each run's median per-object latency (ms); makespan: first start to last end (s); "
                    "objects: every object of every run pooled (descriptive, no ratio: see `pooled`).")
    metric: str
    unit: str
    primary: bool = Field(description="The test's primary metric.")
    baseline: str = Field(description="Environment of the baseline side (the ratio's denominator).")
    candidate: str | None = Field(description="Environment of the candidate side; null for a one-sided test.")
    n_baseline: int
    n_candidate: int
    baseline_median: float | None = Field(description="Median over the baseline's runs (metric unit).")
    candidate_median: float | None
    baseline_lower_bound: bool = Field(False, description="baseline_median is a lower bound (flag LOWER_BOUND: "
                                                          "objects given up while waiting counted at that time).")
    candidate_lower_bound: bool = Field(False, description="candidate_median is a lower bound, as baseline's.")
    baseline_upper_bound: bool = Field(False, description="baseline_median is an upper bound (flag WATCH_GAP: "
                                                          "times seen only by a re-list after a dropped watch; "
                                                          "or RETRIED: times holding a retry's wait).")
    candidate_upper_bound: bool = Field(False, description="candidate_median is an upper bound, as baseline's.")
    ratio: float | None = Field(description="candidate / baseline (lower is faster for every phase metric).")
    ci_low: float | None
    ci_high: float | None
    verdict: str | None
    flags: list[str] = Field(default_factory=list)
    note: str | None = Field(description="Why a side has no numbers (e.g. Nomad has no Bound phase).")
    cell: str | None = Field(description="Cell id (GET /api/cells/{id}).")
    pooled: dict[str, PooledSide] = Field(default_factory=dict, description="statistic objects: side -> the "
                                          "distribution of all its objects (GET .../phases has each one).")


class PhaseTable(BaseModel):
    campaign: str
    rows: list[PhaseRow]
    notes: list[str] = Field(default_factory=list)


def phase_order(test: str) -> list[str]:
    """Every phase any backend defines for the test, in the order of the contract's table."""
    names: list[str] = []
    for (template, _), phases in ph.PHASES.items():
        if template == test:
            names += [p.name for p in phases if p.name not in names]
    return names


def _note(c: CellComparison, baseline: str, candidate: str | None, phase: str) -> str | None:
    if candidate is None:
        return ONE_SIDE
    notes = [ph.CAVEATS[(c.test, phase)]] if (c.test, phase) in ph.CAVEATS and c.n_host and c.n_pod else []
    if c.n_host and c.n_pod and (polled := _polled(c.params)):
        notes.append(polled)
    for env, n in ((baseline, c.n_host), (candidate, c.n_pod)):
        if n == 0:
            notes.append(ph.absent_reason(c.test, env, phase) or _none_yet(c, env, phase))
    return "; ".join(notes) or None


def _polled(params: str) -> str | None:
    """Why a cell observed by polling (`observe=poll` in its params) compares unlike times, else None: a polled
    Kubernetes time ends at the first poll after the event, Nomad's calls are timed when they return (an audit:
    claims provisioned in 50 ms were timed at 504 ms polling every 0.5 s, and "nomad faster" ~10x said nothing)."""
    try:
        words = parse_params(params)
    except ValueError:  # not `k=v k=v`: no observe=poll to read
        return None
    if words.get("observe") != "poll":
        return None
    return (f"observe=poll: each Kubernetes time ends at the first poll after the event (up to poll_interval_s = "
            f"{words.get('poll_interval_s', '?')} s late), Nomad's when its call returns: the ratio favours Nomad by "
            "up to that much; compare with observe: watch")


def _none_yet(c: CellComparison, env: str, phase: str) -> str:
    """Why a side has no figure of a phase it can have: a run with failed objects has no makespan (the
    parser leaves it out; the cell's ERRORS flag names the objects), else no run has measured it yet."""
    if c.metric.endswith("_makespan_s") and "ERRORS" in c.flags:
        return f"no {env} run has a {phase} makespan: runs with failed objects have none (see ERRORS)"
    return f"no {env} run has measured {phase} yet"


def _definitions(test: str, phase: str, envs: list[str]) -> dict[str, str]:
    out = {}
    for env in envs:
        found = next((p.definition for p in ph.PHASES.get((test, env), ()) if p.name == phase), None)
        out[env] = found or ph.absent_reason(test, env, phase) or ""
    return out


def _row(c: CellComparison, phase: str, statistic: str) -> PhaseRow:
    baseline, candidate = c.baseline, c.candidate or None
    absent = [env for env in (baseline, candidate) if env and ph.absent_reason(c.test, env, phase)]
    # a side that cannot have the phase is not "too few runs": the note says why it has none
    flags = [f for f in c.flags if not (absent and f == "INSUFFICIENT")]
    return PhaseRow(
        cluster=c.cluster, node=c.node, test=c.test, params=c.params, phase=phase,
        definition=ph.definition(c.test, phase),
        definitions=_definitions(c.test, phase, [e for e in (baseline, candidate) if e]), statistic=statistic,
        metric=c.metric, unit=c.unit, primary=c.primary, baseline=baseline, candidate=candidate,
        n_baseline=c.n_host, n_candidate=c.n_pod, baseline_median=c.host_median, candidate_median=c.pod_median,
        baseline_lower_bound=c.host_lower_bound, candidate_lower_bound=c.pod_lower_bound,
        baseline_upper_bound=c.host_upper_bound, candidate_upper_bound=c.pod_upper_bound,
        ratio=c.ratio, ci_low=c.ci_low, ci_high=c.ci_high, verdict=c.verdict if candidate else None, flags=flags,
        note=_note(c, baseline, candidate, phase), cell=c.id)


Pooled = dict[tuple[str, str, str, str, str, str], PooledSide]  # (cluster, node, test, params, phase, env)


def _rests_on_bound(n: int, below: int | None, q: float) -> bool:
    """Whether the q-th percentile of n values may be larger in truth: `below` values lie under the least lower
    bound (None: no bound), which can overtake the order statistic the percentile uses (parsers/timeline.py)."""
    return below is not None and rank_rests_on_bound(n, below, q)


def pooled_objects(con: duckdb.DuckDBPyConnection, campaign: str) -> Pooled:
    """Per side and phase, the distribution of every object of the campaign's successful runs, those given up
    while waiting included at the time they were given up (lower bounds, as in the parser's percentiles); a
    percentile resting on a time seen after a dropped watch (upper_bound rows) is an upper bound (the mirror). A file
    written before the upper_bound column, read without migrating it (`podtax report --db`, read-only), has none."""
    late = "p.upper_bound" if con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_name = 'phases' AND column_name = 'upper_bound'"
    ).fetchone()[0] else "false"
    rows = con.execute(f"""
        WITH o AS (
            SELECT p.cluster, p.node, p.test, p.params_key, p.phase, p.env, p.latency_s, p.lower_bound,
                   min(p.latency_s) FILTER (WHERE p.lower_bound)
                       OVER (PARTITION BY p.cluster, p.node, p.test, p.params_key, p.phase, p.env) AS least,
                   {late} AS upper_bound, max(p.latency_s) FILTER (WHERE {late})
                       OVER (PARTITION BY p.cluster, p.node, p.test, p.params_key, p.phase, p.env) AS greatest
            FROM phases p JOIN runs r USING (run_id)
            WHERE p.campaign = $campaign AND r.status = 'ok')
        SELECT cluster, node, test, params_key, phase, env, count(*),
               quantile_cont(latency_s, 0.5) * 1000, quantile_cont(latency_s, 0.99) * 1000,
               CASE WHEN bool_or(lower_bound) THEN count(*) FILTER (WHERE latency_s < least) END,
               CASE WHEN bool_or(upper_bound) THEN count(*) FILTER (WHERE latency_s > greatest) END,
               min(latency_s) * 1000, avg(latency_s) * 1000
        FROM o GROUP BY ALL""", {"campaign": campaign}).fetchall()
    # an upper bound is the mirror: the values above the greatest one, at the mirrored percentile; min is the 0th
    # percentile, the mean a bound whenever it holds one
    return {tuple(r[:6]): PooledSide(objects=r[6], p50_ms=r[7], p99_ms=r[8],
                                     p50_lower_bound=_rests_on_bound(r[6], r[9], 50.0),
                                     p99_lower_bound=_rests_on_bound(r[6], r[9], 99.0),
                                     p50_upper_bound=_rests_on_bound(r[6], r[10], 50.0),
                                     p99_upper_bound=_rests_on_bound(r[6], r[10], 1.0),
                                     min_ms=r[11], avg_ms=r[12],
                                     min_lower_bound=_rests_on_bound(r[6], r[9], 0.0), avg_lower_bound=r[9] is not None,
                                     min_upper_bound=_rests_on_bound(r[6], r[10], 100.0),
                                     avg_upper_bound=r[10] is not None) for r in rows}


def _objects_row(p50: PhaseRow, pooled: Pooled) -> PhaseRow | None:
    key = (p50.cluster, p50.node, p50.test, p50.params, p50.phase)
    sides = {env: pooled[(*key, env)] for env in (p50.baseline, p50.candidate) if env and (*key, env) in pooled}
    if not sides:
        return None
    base, cand = sides.get(p50.baseline), sides.get(p50.candidate or "")
    return p50.model_copy(update={
        "statistic": "objects", "metric": f"{p50.phase} per object", "unit": "ms", "primary": False,
        "n_baseline": base.objects if base else 0, "n_candidate": cand.objects if cand else 0,
        "baseline_median": base.p50_ms if base else None, "candidate_median": cand.p50_ms if cand else None,
        "ratio": None, "ci_low": None, "ci_high": None, "verdict": None, "flags": [], "cell": None,
        "baseline_lower_bound": False, "candidate_lower_bound": False,
        "baseline_upper_bound": False, "candidate_upper_bound": False,
        "pooled": sides})


def _started(row: PhaseRow, starts: Starts) -> PhaseRow:
    """`row` with each side's definition of the start its runs used (provision_starts.said); a side mixing the two
    starts withholds the ratio, its verdict and interval, and says why in the note."""
    definitions, why = dict(row.definitions), []
    for env in (row.baseline, row.candidate):
        found = starts.get((row.cluster, row.node, row.test, row.params, row.metric, env or ""))
        if env and found and (start := said(row.test, env, row.phase, *found)):
            definitions[env], mixed = start
            why += [mixed] if mixed else []
    if definitions == row.definitions:
        return row
    texts = set(definitions.values())
    update: dict[str, object] = {"definitions": definitions, "definition": texts.pop() if len(texts) == 1 else
                                 "; ".join(f"{env}: {text}" for env, text in definitions.items())}
    if why:
        update |= {"ratio": None, "ci_low": None, "ci_high": None, "verdict": None,
                   "note": "; ".join([*why, *([row.note] if row.note else [])])}
    return row.model_copy(update=update)


def phase_table(report: CampaignReport, pooled: Pooled | None = None, starts: Starts | None = None) -> PhaseTable:
    """The phase rows of a campaign's control-plane cells, grouped by cell key, phases in contract order;
    with `pooled` (pooled_objects), each phase also gets a descriptive row of all its objects; with `starts`
    (provision_starts), provisioned and bound say per side which start their runs used (_started)."""
    cells = {(c.cluster, c.node, c.test, c.params, c.metric): c
             for c in report.cells if c.test in ph.TEMPLATES}
    keys = list(dict.fromkeys(k[:4] for k in cells))
    rows = []
    for cluster, node, test, params in keys:
        for phase in phase_order(test):
            for statistic, suffix in STATISTICS:
                c = cells.get((cluster, node, test, params, phase + suffix))
                if c is not None:
                    rows.append(_started(_row(c, phase, statistic), starts) if starts else _row(c, phase, statistic))
                    if statistic == "p50" and pooled:
                        extra = _objects_row(rows[-1], pooled)
                        rows += [extra] if extra else []
    notes = sorted({r.note for r in rows if r.note})
    return PhaseTable(campaign=report.campaign, rows=rows, notes=notes)


def phase_latencies(con: Cursor, campaign: str, *, phase: str | None = None,
                    env: str | None = None, limit: int = 100_000, batch: int = BATCH) -> Batches:
    """Per-object latencies of a campaign's control-plane runs (the phases table), run order, `batch` rows at a
    time: a million rows built at once took more memory than the analyzer has."""
    return batches(con, """
        SELECT p.run_id, p.cluster, p.node, p.env, p.backend, p.test, p.params_key AS params, p.object,
               p.phase, p.start_s, p.latency_s, p.lower_bound, p.upper_bound, r.status
        FROM phases p LEFT JOIN runs r USING (run_id)
        WHERE p.campaign = $campaign AND ($phase::varchar IS NULL OR p.phase = $phase)
          AND ($env::varchar IS NULL OR p.env = $env)
        ORDER BY r.started_at NULLS LAST, p.run_id, p.start_s, p.object, p.phase
        LIMIT $limit""", {"campaign": campaign, "phase": phase, "env": env, "limit": limit}, batch)
