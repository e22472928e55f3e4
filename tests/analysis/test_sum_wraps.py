"""DuckDB 2.0.1 wrapped an integer sum to a tiny integer (review r7): a sum its statistics call never NULL, grouped
over a LEFT JOIN whose right side they prove empty, ordered after, read 240,000,000 as 0 through the
compressed_materialization optimizer. In the cells query the LEFT JOIN is `imported`: empty of imports while live
raw logs are stored (imported_from all NULL). podtax_analyzer.duckcon has the details."""

from __future__ import annotations

from analysis_synth import fixture_campaign, insert_cells
from podtax_analyzer import duckcon
from podtax_analyzer.celldata import load_cells


def test_the_golden_store_with_live_raw_logs_keeps_node_e_throttled_time(con):
    cells = fixture_campaign()
    insert_cells(con, cells)
    # every run has its raw log, stored live: none imported
    con.execute("""
        INSERT INTO raw_logs (run_id, event_id, campaign, cluster, node, env, test, params, params_key, attempt,
                              started_at, ended_at, exit_code, stdout, stderr, tool_version, truncated, timed_out,
                              provenance, imported_from, received_at)
        SELECT run_id, event_id, campaign, cluster, node, env, test, params, params_key, attempt,
               coalesce(started_at, stored_at), coalesce(started_at, stored_at), 0, '', '', NULL, false, false, '{}',
               NULL, stored_at
        FROM runs""")
    assert con.execute("SELECT count(*) FROM raw_logs").fetchone()[0] == con.execute(
        "SELECT count(*) FROM runs").fetchone()[0]
    spec = next(c.pod for c in cells if c.node == "node-e")
    want = sum(u for n, u in zip(spec.nr_throttled, spec.throttled_usec, strict=True) if n and n > 0)
    assert want > 0
    got = [c for c in load_cells(con, "synthetic") if c.node == "node-e"]
    assert [(c.pod.n_throttled, c.pod.throttled_usec) for c in got] == [(len(spec.values), want)]


def test_the_analyzers_connection_sums_right_over_a_left_join_proved_empty(tmp_path):
    con = duckcon.connect(tmp_path / "t.duckdb")
    try:
        con.execute("""CREATE TABLE t AS SELECT i AS id, i % 2 AS g, CASE WHEN i % 2 = 1 THEN 2500000 ELSE 0 END::BIGINT
                       AS n, CASE WHEN i % 2 = 1 THEN 2500000 END::BIGINT AS u FROM range(192) r(i)""")
        con.execute("CREATE TABLE e AS SELECT i::BIGINT AS id, 'c' AS c, NULL::VARCHAR AS x FROM range(192) r(i)")
        want = [(0, 0), (1, 96 * 2_500_000)]
        # sums the statistics call never NULL; the last one was wrong even with the cast inside the coalesce
        for expr in ("coalesce(sum(t.u), 0)::BIGINT", "coalesce(sum(t.u) FILTER (WHERE t.n > 0), 0)::BIGINT",
                     "ifnull(sum(t.u), 0)", "sum(t.n)",
                     "coalesce(sum(CASE WHEN t.n > 0 THEN t.u ELSE 0 END)::BIGINT, 0)"):
            for cur in (con, con.cursor()):  # the store's reads go through cursors
                got = cur.execute(f"""
                    SELECT g, s FROM (
                        SELECT t.g, {expr} AS s
                        FROM t LEFT JOIN (SELECT id FROM e WHERE c = 'c' AND x IS NOT NULL) e ON e.id = t.id
                        GROUP BY t.g)
                    ORDER BY g""").fetchall()
                assert got == want, expr
    finally:
        con.close()
