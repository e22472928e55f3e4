"""Everything the HTML report and the workbook show about one campaign, read in a few queries.

The statistics come from ``compare_campaign`` (the one place they are computed); this module adds
the raw values behind each cell, provenance per node and side, the scheduler's placements for the
campaign's tests and, when the database has them, control-plane phase latencies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

import duckdb
from podtax import phases as phase_defs
from podtax.flags import BLOCKING
from podtax.param_labels import label

from podtax_analyzer.celldata import CELL_ID_SQL, HOST, POD, VERSION_SQL
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.report_models import CampaignReport, CellComparison

PLACEMENT_LIMIT = 500


@dataclass(frozen=True)
class RunValue:
    """One run's value of one cell's metric."""

    run_id: str
    env: str
    value: float
    started_at: datetime | None


@dataclass
class ReportData:
    """A campaign's comparison table plus what the report shows around it.

    runs: cell id -> its runs in time order. provenance: one dict per (node, env). placements: newest
    first. phases: per-object control-plane latencies (load_phases; empty when absent).
    """

    report: CampaignReport
    runs: dict[str, list[RunValue]] = field(default_factory=dict)
    provenance: list[dict[str, Any]] = field(default_factory=list)
    placements: list[dict[str, Any]] = field(default_factory=list)
    phases: list[dict[str, Any]] = field(default_factory=list)

    @property
    def campaign(self) -> str:
        return self.report.campaign

    def where(self, cell: CellComparison) -> str:
        """The cell's node, as "cluster/node" when the campaign spans clusters (a node name may repeat)."""
        return self.place(getattr(cell, "cluster", "local"), cell.node)

    def place(self, cluster: str, node: str) -> str:
        """A node's name as `where` writes it."""
        return f"{cluster}/{node}" if self._clusters > 1 else node

    @cached_property
    def _clusters(self) -> int:
        """How many clusters the campaign's cells span, counted once: `place` counted them over every cell at each
        call, and the workbook calls it per cell and node (a 200,000-run campaign's workbook spent seconds on it)."""
        return len({getattr(c, "cluster", "local") for c in self.report.cells})

    def params_label(self, test: str, params: str) -> str:
        """A cell's params as every label of the report shows them (CampaignReport.params_labels: computed once
        over its cells and failed runs; a phase row's params are its cell's); the key stays in the data tables."""
        return label(self.report.params_labels, test, params)

    @staticmethod
    def envs(cell: CellComparison) -> tuple[str, str]:
        """(baseline, candidate) environment names of a cell as the analysis chose them (celldata.sides_for:
        the test's environments, not the runs a metric happens to have); candidate "" for a one-sided test."""
        return cell.baseline, cell.candidate


def headline_cells(cells: list[CellComparison]) -> list[CellComparison]:
    """The cells the matrix shows: per (test, params) its primary metric's cells; every metric of a
    (test, params) that has no primary metric among its cells (so no test disappears)."""
    with_primary = {(c.test, c.params) for c in cells if c.primary}
    return [c for c in cells if c.primary or (c.test, c.params) not in with_primary]


def verdict_withheld(cell: CellComparison) -> list[str]:
    """The cell's flags that withhold its verdict (podtax.flags.BLOCKING: too few runs, drift, and every flag
    that withholds the ratio too), in the cell's order; empty when the verdict stands. The HTML and workbook
    matrices paint such a cell neutral and say so, whatever its ratio: a colour there reads as a verdict."""
    return [f for f in cell.flags if f in BLOCKING]


def side_label(env: str, pair: tuple[str, str]) -> str:
    """'pod' for kubernetes against the host (the pod tax); otherwise the environment's own name."""
    return "pod" if pair == (HOST, POD) and env == POD else env


def ratio_label(pair: tuple[str, str]) -> str:
    """'pod/host', 'nomad/kubernetes': candidate over baseline; 'kubernetes only' for a one-sided test."""
    if not pair[1]:
        return f"{pair[0]} only"
    return f"{side_label(pair[1], pair)}/{side_label(pair[0], pair)}"


def caveat(cell: CellComparison) -> str | None:
    """What to know before reading the cell's figures (podtax.phases.CAVEATS: Nomad's deletes queue per plugin,
    at the run's concurrency), when both sides have runs, as the phase table says it; None otherwise."""
    return phase_defs.caveat(cell.test, cell.metric) if cell.n_host and cell.n_pod else None


def table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    row = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = $1", [name]).fetchone()
    return bool(row and row[0])


def load_runs(con: duckdb.DuckDBPyConnection, campaign: str) -> dict[str, list[RunValue]]:
    rows = con.execute(f"""
        SELECT {CELL_ID_SQL} AS cell, r.run_id, r.env, m.value, r.started_at
        FROM runs r JOIN metrics m ON m.run_id = r.run_id
        WHERE r.campaign = $1 AND r.status = 'ok'
        ORDER BY r.started_at NULLS LAST, r.sequence, r.run_id""", [campaign]).fetchall()
    out: dict[str, list[RunValue]] = {}
    for cell, run_id, env, value, started in rows:
        out.setdefault(cell, []).append(RunValue(run_id, env, float(value), started))
    return out


def load_provenance(con: duckdb.DuckDBPyConnection, campaign: str) -> list[dict[str, Any]]:
    """Per node and environment: runs, tool builds, kernels and CPUs seen in the runs' provenance,
    and the node's latest host facts (OS, architecture, hardware threads) where reported."""
    has_raw = table_exists(con, "raw_logs")
    join = "LEFT JOIN raw_logs l ON l.run_id = r.run_id" if has_raw else ""
    kernel = "list(DISTINCT l.provenance->>'kernel') FILTER (WHERE l.provenance->>'kernel' IS NOT NULL)" \
        if has_raw else "[]::VARCHAR[]"
    cpu = "list(DISTINCT l.provenance->>'cpu_model') FILTER (WHERE l.provenance->>'cpu_model' IS NOT NULL)" \
        if has_raw else "[]::VARCHAR[]"
    rows = con.execute(f"""
        WITH facts AS (
            SELECT node, arg_max(kernel, seen_at) AS kernel, arg_max(os, seen_at) AS os,
                   arg_max(cpu_model, seen_at) AS cpu_model, arg_max(hw_threads, seen_at) AS hw_threads,
                   arg_max(arch, seen_at) AS arch
            FROM host_facts GROUP BY node),
        sides AS (
            SELECT r.node, r.env, count(*) AS runs,
                   list(DISTINCT {VERSION_SQL}) FILTER (WHERE r.tool IS NOT NULL) AS tools,
                   {kernel} AS kernels, {cpu} AS cpus
            FROM runs r {join}
            WHERE r.campaign = $1 AND r.status = 'ok' GROUP BY r.node, r.env)
        SELECT s.node, s.env, s.runs, s.tools, s.kernels, s.cpus,
               f.kernel, f.os, f.cpu_model, f.hw_threads, f.arch
        FROM sides s LEFT JOIN facts f USING (node) ORDER BY s.node, s.env""", [campaign]).fetchall()
    out = []
    for node, env, n, tools, kernels, cpus, f_kernel, f_os, f_cpu, f_threads, f_arch in rows:
        out.append({
            "node": node, "env": env, "runs": n, "tools": sorted(tools or []),
            "kernels": sorted(kernels or ([f_kernel] if f_kernel and env == HOST else [])),
            "cpus": sorted(cpus or ([f_cpu] if f_cpu else [])),
            "os": f_os, "arch": f_arch, "hw_threads": f_threads,
        })
    return out


def load_placements(con: duckdb.DuckDBPyConnection, campaign: str) -> list[dict[str, Any]]:
    """The scheduler's placements of pods that name one of the campaign's tests, newest first."""
    rows = con.execute("""
        SELECT placed_at, namespace, pod, node, test, candidates, message FROM placements
        WHERE test IN (SELECT DISTINCT test FROM runs WHERE campaign = $1)
        ORDER BY placed_at DESC LIMIT $2""", [campaign, PLACEMENT_LIMIT]).fetchall()
    out = []
    for placed_at, namespace, pod, node, test, candidates, message in rows:
        cands = json.loads(candidates) if isinstance(candidates, str) else (candidates or [])
        score = next((c.get("score") for c in cands if c.get("node") == node), None)
        out.append({"placed_at": placed_at, "namespace": namespace, "pod": pod, "node": node, "test": test,
                    "score": score, "candidates": cands, "message": message})
    return out


def load_phases(con: duckdb.DuckDBPyConnection, campaign: str) -> list[dict[str, Any]]:
    """Per-object control-plane phase latencies of the campaign's successful runs, keyed by cell as the phase
    table (phase_table.pooled_objects): {cluster, node, test, params, env (the backend), phase, seconds,
    lower_bound, upper_bound, caveat}, in cell order (lower_bound: an object given up while waiting, timed until then;
    upper_bound: its end seen only by a re-list after a dropped watch, timed when seen). A
    plot or sheet that pooled a test's cells (pod-startup with and without a volume)
    showed a median matching neither cell's. caveat: what to know before comparing the backends there
    (podtax.phases.CAVEATS), when the cell's phase has both, as the phase table says it; else None."""
    if not table_exists(con, "phases"):
        return []
    rows = con.execute("""
        SELECT p.cluster, p.node, p.test, p.params_key, p.backend, p.phase, p.latency_s, p.lower_bound,
               p.upper_bound,
               count(DISTINCT p.backend) OVER (PARTITION BY p.cluster, p.node, p.test, p.params_key, p.phase)
        FROM phases p JOIN runs r USING (run_id)
        WHERE p.campaign = $1 AND r.status = 'ok'
        ORDER BY p.cluster, p.node, p.test, p.params_key, p.backend, p.phase, p.run_id, p.start_s""",
                       [campaign]).fetchall()
    keys = ("cluster", "node", "test", "params", "env", "phase", "seconds", "lower_bound", "upper_bound")
    return [{**dict(zip(keys, row[:9], strict=True)),
             "caveat": phase_defs.caveat(row[2], row[5]) if row[9] > 1 else None} for row in rows]


def load_report_data(con: duckdb.DuckDBPyConnection, campaign: str, *, threshold: float = 0.01,
                     correction: str = "holm") -> ReportData:
    """Raises UnknownCampaign (from compare_campaign) when nothing of the campaign is stored."""
    report = compare_campaign(con, campaign, threshold=threshold, correction=correction)
    return ReportData(report=report, runs=load_runs(con, campaign), provenance=load_provenance(con, campaign),
                      placements=load_placements(con, campaign), phases=load_phases(con, campaign))
