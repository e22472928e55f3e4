"""Which run holds a value of a cell's side: the cells are loaded without run ids (celldata.load_cells), so the
outliers' runs are named afterwards, in one query over those values only."""

from __future__ import annotations

import duckdb
import numpy as np

from podtax_analyzer.celldata import CellData, Side

_KEY_COLUMNS = ("cluster", "node", "test", "params_key", "metric", "env", "value")
_RUN_IDS_QUERY = f"""
WITH w AS (SELECT DISTINCT * FROM (SELECT {", ".join(f"unnest(${c}) AS {c}" for c in _KEY_COLUMNS)}))
SELECT r.cluster, r.node, r.test, r.params_key, m.name, r.env, m.value,
       list(r.run_id ORDER BY r.started_at NULLS LAST, r.sequence, r.run_id)
FROM (SELECT * FROM metrics WHERE value IN (SELECT value FROM w)) m
JOIN runs r ON r.run_id = m.run_id
JOIN w ON w.cluster = r.cluster AND w.node = r.node AND w.test = r.test AND w.params_key = r.params_key
      AND w.metric = m.name AND w.env = r.env AND w.value = m.value
WHERE r.campaign = $campaign AND r.status = 'ok'
GROUP BY ALL
"""
UNKNOWN_RUN = "unknown (the run changed while the table was computed)"


def run_ids_at(con: duckdb.DuckDBPyConnection, wanted: list[tuple[CellData, Side, int]]) -> list[str]:
    """The run id of each (cell, side, position in side.values), in one query over those values only.

    A position is named by its value: the k-th run (in run order) holding value v in the side is the
    k-th position of v in side.values, since both follow the same order. A run stored meanwhile comes
    later in that order, so it shifts nothing; a run deleted meanwhile (a re-parse) shifts the equal
    values after it, and the last of them reads UNKNOWN_RUN."""
    if not wanted:
        return []
    keys = []
    for cell, side, i in wanted:
        value = float(side.values[i])
        keys.append((cell.campaign, cell.cluster, cell.node, cell.test, cell.params_key, cell.metric, side.env, value,
                     int(np.count_nonzero(side.values[:i] == value))))
    found: dict[tuple, list[str]] = {}
    for campaign in dict.fromkeys(k[0] for k in keys):
        mine = [k for k in keys if k[0] == campaign]
        params = {c: [k[j + 1] for k in mine] for j, c in enumerate(_KEY_COLUMNS)}
        for row in con.execute(_RUN_IDS_QUERY, {**params, "campaign": campaign}).fetchall():
            found[(campaign, *row[:7])] = row[7]
    out = []
    for k in keys:
        ids = found.get(k[:8], [])
        out.append(ids[k[8]] if k[8] < len(ids) else UNKNOWN_RUN)
    return out
