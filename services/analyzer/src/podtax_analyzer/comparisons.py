"""The comparison table of a campaign: one row per cell, pod against host, told truthfully.

For every cell (campaign, node, test, params, metric):
- ratio = median(pod) / median(host) with a 95% BCa bootstrap interval (each side resampled
  separately, seeded per cell from ``seed`` and the cell id, so a cell's numbers do not depend on
  which other cells are in the table); where the bootstrap is unstable the Hodges-Lehmann interval
  of log values is shown instead, and it is always given as a cross-check (hl_*);
- a two-sided Mann-Whitney U p-value, adjusted across the campaign's cells (Holm or BH);
- flags (podtax_analyzer.flags), each with a sentence;
- a verdict (podtax_analyzer.stats.verdict) with the practical threshold ``threshold``.
Cross-node summary sentences are built from the table (podtax_analyzer.summary).
"""

from __future__ import annotations

import duckdb
from podtax.events import CellStats

from podtax_analyzer.cell_analysis import analyze, finalize
from podtax_analyzer.celldata import CELL_ID_SQL, VERSION_SQL, load_cells
from podtax_analyzer.report_models import CampaignReport, CellComparison, CellRun, CellValues
from podtax_analyzer.stats.multiple import METHODS, adjust
from podtax_analyzer.summary import summarize


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


def _compare(cells, threshold: float, correction: str, seed: int) -> list[CellComparison]:
    analyses = [analyze(c, threshold=threshold, seed=seed) for c in cells]
    adjusted = adjust([a.fields["p_value"] for a in analyses], correction)
    return [finalize(a, p, threshold=threshold, correction=correction) for a, p in zip(analyses, adjusted, strict=True)]


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
    rows = _compare(load_cells(con, campaign), threshold, correction, seed)
    warnings = [] if rows else ["no successful run with metrics is stored for this campaign yet"]
    return CampaignReport(campaign=campaign, threshold=threshold, correction=correction, cells=rows,
                          summary=summarize(rows), warnings=warnings)


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
) -> list[CellStats]:
    """Statistics of the cells of one (campaign, node, test, params), one per metric, for the runner.

    The correction runs over these metrics only (the runner decides per cell); ratio and interval are
    identical to the campaign table's because the bootstrap is seeded per cell.
    """
    _check(threshold, correction)
    rows = _compare(load_cells(con, campaign, node=node, test=test, params_key=params_key),
                    threshold, correction, seed)
    return [CellStats(campaign=c.campaign, node=c.node, test=c.test, params_key=c.params, metric=c.metric,
                      n_host=c.n_host, n_pod=c.n_pod, ratio=c.ratio, ci_low=c.ci_low, ci_high=c.ci_high,
                      verdict=c.verdict, flags=list(c.flags)) for c in rows]


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
