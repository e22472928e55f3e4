"""The comparison table of a campaign: one row per cell, candidate against baseline (pod against host,
nomad against kubernetes: the sides are named by the data, celldata.sides_for), told truthfully.

For every cell (campaign, node, test, params, metric):
- ratio = median(candidate) / median(baseline) with a 95% BCa bootstrap interval (each side resampled
  separately, seeded per cell from ``seed`` and the cell id, so a cell's numbers do not depend on
  which other cells are in the table); where the bootstrap is unstable the Hodges-Lehmann interval
  of log values is shown instead, and it is always given as a cross-check (hl_*);
- a two-sided Mann-Whitney U p-value, adjusted (Holm or BH) within its family: the family is one
  primary metric per cell (podtax.templates.is_primary_metric; a test whose template names none
  puts all its metrics there), and the secondary metrics (transforms of the primary, extra
  percentiles) form a second family corrected separately, so they do not drain the primary
  verdicts' power. The descriptive figures (podtax.phases.is_descriptive: kube-burner's min and avg of a
  control-plane phase) are in neither family: their ratio, interval and raw p-value are given, with no
  adjusted p-value and no verdict of their own, and they move no other cell's adjusted p-value. Metrics with
  no variance (every value identical) are not tested, nor cells with fewer
  than podtax.flags.MIN_RUNS runs on a side (INSUFFICIENT: the ratio only, no interval, Hodges-Lehmann
  effect or p-value, so they leave the family and move no other cell's adjusted p-value). A secondary
  metric whose verdict differs from its cell's primary verdict says so in its sentence and a
  warning, never silently;
- flags (podtax_analyzer.flags), each with a sentence;
- a verdict (podtax_analyzer.stats.verdict) with the practical threshold ``threshold``.
Cross-node summary sentences are built from the table (podtax_analyzer.summary).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import duckdb
from podtax.events import CellStats
from podtax.param_labels import params_labels
from podtax.phases import DESCRIPTIVE_WHY, is_descriptive

from podtax_analyzer import flags as fl
from podtax_analyzer import imports_twice, provision_starts, sequence
from podtax_analyzer.cell_analysis import fill_run_ids, finalize
from podtax_analyzer.cell_pool import analyze_all
from podtax_analyzer.celldata import CELL_ID_SQL, VERSION_SQL, CellData, load_cells
from podtax_analyzer.report_models import CampaignReport, CellComparison, CellRun, CellValues, is_primary_metric
from podtax_analyzer.stats.multiple import METHODS, adjust
from podtax_analyzer.stats.verdict import FASTER, SET_BY_PARAMS, SLOWER, change_phrase
from podtax_analyzer.summary import summarize
from podtax_analyzer.wording import side_name


class UnknownCampaign(LookupError):
    """No run and no submission of that campaign is stored."""


def campaign_exists(con: duckdb.DuckDBPyConnection, campaign: str) -> bool:
    row = con.execute(
        "SELECT EXISTS (SELECT 1 FROM runs WHERE campaign = $c) "
        "OR EXISTS (SELECT 1 FROM campaigns WHERE campaign = $c)",
        {"c": campaign}).fetchone()
    return bool(row and row[0])


def _check(threshold: float, correction: str) -> None:
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold must be a fraction in [0, 1), got {threshold}")
    if correction not in METHODS:
        raise ValueError(f"unknown correction {correction!r}; use one of {', '.join(METHODS)}")


def _group(c: CellData) -> tuple[str, str, str, str]:
    return (c.cluster, c.node, c.test, c.params_key)


def primary_flags(cells: list[CellData]) -> list[bool]:
    """Which cells belong to the primary family: the test's primary metric, or every metric of a
    (cluster, node, test, params) whose template names no primary metric among them."""
    prim = [is_primary_metric(c.test, c.params_key, c.metric) for c in cells]
    named = {_group(c) for c, p in zip(cells, prim, strict=True) if p}
    return [p or _group(c) not in named for c, p in zip(cells, prim, strict=True)]


def _reconcile(rows: list[CellComparison], prim: list[bool]) -> list[CellComparison]:
    """Make a secondary metric whose verdict differs from its primary metric's say so (a difference
    where either one calls a direction; "inconclusive" next to "no detectable difference" is not)."""
    heads = {(c.cluster, c.node, c.test, c.params): c for c, p in zip(rows, prim, strict=True) if p}
    out = []
    for c, p in zip(rows, prim, strict=True):
        head = heads.get((c.cluster, c.node, c.test, c.params))
        # a metric the parameters set, or a descriptive one, has no verdict of its own to correct (in no family)
        if p or head is None or head.verdict == c.verdict or not {head.verdict, c.verdict} & {FASTER, SLOWER} \
                or c.verdict == SET_BY_PARAMS or is_descriptive(c.test, c.metric):
            out.append(c)
            continue
        names = (side_name(head.baseline, (head.baseline, head.candidate)),
                 side_name(head.candidate, (head.baseline, head.candidate)))
        what = (change_phrase(head.ratio, head.higher_is_better, names, head.unit) if head.verdict in (FASTER, SLOWER)
                and head.ratio is not None else head.verdict + _withheld(head, " (withheld: {})"))
        # a verdict a flag withheld, or one no test gave (every value identical), owes nothing to the secondary
        # family's correction: say which
        own = (_withheld(c, "is withheld ({})") or f"({c.direction or c.verdict}) " + (
            "is corrected among secondary metrics" if c.p_value is not None
            else "was reached without a p-value, so no correction applies"))
        note = (f"Secondary metric: the test's primary metric {head.metric} says {what}, which is the "
                f"headline; this metric's own verdict {own}.")
        out.append(c.model_copy(update={"sentence": f"{c.sentence} {note}", "warnings": [*c.warnings, note]}))
    return out


def _withheld(c: CellComparison, form: str) -> str:
    """``form`` holding the flags of ``c`` that withhold its verdict (podtax.flags.BLOCKING), or "" when none does."""
    blocking = [f for f in c.flags if f in fl.BLOCKING]
    return form.format(", ".join(blocking)) if blocking else ""


Rows = list[CellComparison]


def _compare(con: duckdb.DuckDBPyConnection, cells: list[CellData], threshold: float, correction: str,
             seed: int, withhold: Callable[[Rows], Rows] = lambda rows: rows) -> Rows:
    """The cells' rows; ``withhold`` (sequence.mark in compare_campaign) changes their verdicts before a secondary
    metric quotes its primary's (_reconcile), so the note never quotes a verdict withheld after it."""
    cells = provision_starts.checked(con, cells)  # a side mixing provision starts: CONFOUNDED
    analyses = analyze_all(cells, threshold=threshold, seed=seed)
    fill_run_ids(con, analyses)
    prim = primary_flags(cells)
    shown = [is_descriptive(c.test, c.metric) for c in cells]  # in neither family
    pvals = [None if d else a.fields["p_value"] for a, d in zip(analyses, shown, strict=True)]
    adj_prim = adjust([p if f else None for p, f in zip(pvals, prim, strict=True)], correction)
    adj_sec = adjust([None if f else p for p, f in zip(pvals, prim, strict=True)], correction)
    apart = fl.other_params(cells)  # one-sided cells whose sides ran different params
    rows = []
    for a, f, d, pp, ps in zip(analyses, prim, shown, adj_prim, adj_sec, strict=True):
        label = (f"not tested (descriptive: {DESCRIPTIVE_WHY})" if d else correction if f
                 else f"{correction} over the secondary metrics")
        rows.append(finalize(a, pp if f else ps, threshold=threshold, correction=label,
                             other_params=apart.get(a.cell.id), descriptive=d))
    return _reconcile(withhold(rows), prim)


def compare_campaign(
    con: duckdb.DuckDBPyConnection,
    campaign: str,
    *,
    threshold: float = 0.01,
    correction: str = "holm",
    seed: int = 0,
) -> CampaignReport:
    """The full comparison table of ``campaign`` with its summary sentences.

    threshold: practical threshold as a fraction (0.01 = 1%). correction: "holm" or "bh".
    Raises UnknownCampaign when nothing of the campaign is stored, ValueError on bad arguments.
    """
    _check(threshold, correction)
    if not campaign_exists(con, campaign):
        raise UnknownCampaign(campaign)
    cells = load_cells(con, campaign)
    failed = sequence.failed_runs(con, campaign)
    values = {c.id: {c.host.env: c.host.values, c.pod.env: c.pod.values} for c in cells}
    rows = _compare(con, cells, threshold, correction, seed,
                    lambda rows: sequence.mark(con, campaign, rows, failed, values, threshold))
    warnings = [] if rows else ["no successful run with metrics is stored for this campaign yet"]
    # once for every view of the report (its phase rows are its cells'): no two cells' labels read alike
    labels = params_labels([*((c.test, c.params) for c in rows), *((f.test, f.params_key) for f in failed)])
    warnings += sequence.failed_warnings(failed, labels)
    warnings += [w for w in [imports_twice.warning(con, campaign)] if w]
    return CampaignReport(campaign=campaign, threshold=threshold, correction=correction, cells=rows,
                          summary=summarize(rows, only_imported(cells), threshold, labels), warnings=warnings,
                          params_labels=labels)


def only_imported(cells: list[CellData]) -> frozenset[str]:
    """Ids of the cells every run of which came from `podtax import` (none made by podtax): the summary takes
    their IMPORTED flag as information, not as a reason to leave them out."""
    return frozenset(c.id for c in cells if c.host.n + c.pod.n and
                     c.host.n_imported + c.pod.n_imported == c.host.n + c.pod.n)


def cell_stats_for(
    con: duckdb.DuckDBPyConnection,
    campaign: str,
    node: str,
    test: str,
    params_key: str,
    *,
    threshold: float = 0.01,
    correction: str = "holm",
    seed: int = 0,
    cluster: str | None = None,
) -> list[CellStats]:
    """Statistics of the cells of one (campaign, node, test, params), one per metric, for the runner.

    The correction runs over these metrics only (the runner decides per cell); ratio and interval are
    identical to the campaign table's because the bootstrap is seeded per cell.
    """
    _check(threshold, correction)
    rows = _compare(con, load_cells(con, campaign, node=node, test=test, params_key=params_key, cluster=cluster),
                    threshold, correction, seed)
    return [CellStats(campaign=c.campaign, node=c.node, test=c.test, params_key=c.params, metric=c.metric,
                      n_host=c.n_host, n_pod=c.n_pod, ratio=_finite(c.ratio), ci_low=_finite(c.ci_low),
                      ci_high=_finite(c.ci_high), verdict=c.verdict, flags=list(c.flags)) for c in rows]


def _finite(x: float | None) -> float | None:
    """None for a ratio that overflowed (a median near 0 under one near the float maximum): an event
    carries only finite numbers, and one such cell must not stop the publication of every other."""
    return x if x is not None and math.isfinite(x) else None


def cell_values(con: duckdb.DuckDBPyConnection, cell_id: str) -> CellValues | None:
    """Raw values of one cell by run (both sides, in run order); None when the id is unknown."""
    rows = con.execute(f"""
        SELECT r.campaign, r.node, r.test, r.params_key, m.name, m.unit, m.higher_is_better,
               r.run_id, r.env, r.started_at, m.value, {VERSION_SQL}, r.flags, r.nr_throttled, r.cpu_limit
        FROM runs r JOIN metrics m ON m.run_id = r.run_id
        WHERE r.status = 'ok' AND {CELL_ID_SQL} = $id
        ORDER BY r.started_at NULLS LAST, r.sequence, r.run_id""", {"id": cell_id}).fetchall()
    if not rows:
        return None
    first = rows[0]
    side_pos: dict[str, int] = {}
    runs = []
    for i, row in enumerate(rows):
        env = row[8]
        runs.append(CellRun(run_id=row[7], env=env, order=i, side_order=side_pos.get(env, 0), started_at=row[9],
                            value=row[10], tool_version=row[11] or None, flags=list(row[12] or []),
                            nr_throttled=row[13], cpu_limit=row[14]))
        side_pos[env] = side_pos.get(env, 0) + 1
    return CellValues(id=cell_id, campaign=first[0], node=first[1], test=first[2], params=first[3], metric=first[4],
                      unit=first[5], higher_is_better=first[6], runs=runs)
