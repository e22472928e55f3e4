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
from pydantic import BaseModel, Field

from podtax_analyzer.report_models import CampaignReport, CellComparison

STATISTICS: tuple[tuple[str, str], ...] = (("p50", "_p50_ms"), ("makespan", "_makespan_s"))
ONE_SIDE = "one side only: compare two campaigns with `podtax compare`"


class PhaseRow(BaseModel):
    cluster: str
    node: str
    test: str
    params: str
    phase: str
    definition: str = Field(description="From which end point to which, per backend where they differ.")
    definitions: dict[str, str] = Field(description="Side -> the phase's definition there (or why it has none).")
    statistic: Literal["p50", "makespan"] = Field(
        description="p50: each run's median per-object latency (ms); makespan: first start to last end (s).")
    metric: str
    unit: str
    primary: bool = Field(description="The test's primary metric.")
    baseline: str = Field(description="Environment of the baseline side (the ratio's denominator).")
    candidate: str | None = Field(description="Environment of the candidate side; null for a one-sided test.")
    n_baseline: int
    n_candidate: int
    baseline_median: float | None = Field(description="Median over the baseline's runs (metric unit).")
    candidate_median: float | None
    ratio: float | None = Field(description="candidate / baseline (lower is faster for every phase metric).")
    ci_low: float | None
    ci_high: float | None
    verdict: str | None
    flags: list[str] = Field(default_factory=list)
    note: str | None = Field(description="Why a side has no numbers (e.g. Nomad has no Bound phase).")
    cell: str | None = Field(description="Cell id (GET /api/cells/{id}).")


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
    notes = []
    for env, n in ((baseline, c.n_host), (candidate, c.n_pod)):
        if n == 0:
            notes.append(ph.absent_reason(c.test, env, phase) or f"no {env} run has measured {phase} yet")
    return "; ".join(notes) or None


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
        ratio=c.ratio, ci_low=c.ci_low, ci_high=c.ci_high, verdict=c.verdict if candidate else None, flags=flags,
        note=_note(c, baseline, candidate, phase), cell=c.id)


def phase_table(report: CampaignReport) -> PhaseTable:
    """The phase rows of a campaign's control-plane cells, grouped by cell key, phases in contract order."""
    cells = {(c.cluster, c.node, c.test, c.params, c.metric): c
             for c in report.cells if c.test in ph.TEMPLATES}
    keys = list(dict.fromkeys(k[:4] for k in cells))
    rows = []
    for cluster, node, test, params in keys:
        for phase in phase_order(test):
            for statistic, suffix in STATISTICS:
                c = cells.get((cluster, node, test, params, phase + suffix))
                if c is not None:
                    rows.append(_row(c, phase, statistic))
    notes = sorted({r.note for r in rows if r.note})
    return PhaseTable(campaign=report.campaign, rows=rows, notes=notes)


def phase_latencies(con: duckdb.DuckDBPyConnection, campaign: str, *, phase: str | None = None,
                    env: str | None = None, limit: int = 100_000) -> list[dict]:
    """Per-object latencies of a campaign's control-plane runs (the phases table), run order."""
    cur = con.execute("""
        SELECT p.run_id, p.cluster, p.node, p.env, p.backend, p.test, p.params_key AS params, p.object,
               p.phase, p.start_s, p.latency_s, r.status
        FROM phases p LEFT JOIN runs r USING (run_id)
        WHERE p.campaign = $campaign AND ($phase::varchar IS NULL OR p.phase = $phase)
          AND ($env::varchar IS NULL OR p.env = $env)
        ORDER BY r.started_at NULLS LAST, p.run_id, p.start_s, p.object, p.phase
        LIMIT $limit""", {"campaign": campaign, "phase": phase, "env": env, "limit": limit})
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
