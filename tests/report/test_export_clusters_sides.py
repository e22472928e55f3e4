"""What comparisons.csv/parquet and the workbook's comparison table say against the API's JSON, for cells the
JSON tells apart by fields those tables lacked: the same node name in two clusters is two cells (`cluster`), and a
control-plane campaign's sides are kubernetes and nomad, not host and pod (`baseline`, `candidate`). The CSV gave
two rows alike in every column but the hash id, and its host_/pod_ columns named no environment."""

from __future__ import annotations

import csv
import io
import zipfile

import duckdb
import numpy as np
import openpyxl
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells, lognormal
from fastapi.testclient import TestClient
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store
from podtax_analyzer.workbook import COMPARISON_HEADERS


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    rng = np.random.default_rng(4)
    store = Store(tmp_path_factory.mktemp("clusters") / "podtax.duckdb")
    cells = [CellSpec("node-1", SideSpec(lognormal(rng, 1000, 0.01, 8)), SideSpec(lognormal(rng, f, 0.01, 8)),
                      campaign="two", cluster=cluster) for cluster, f in (("east", 970.0), ("west", 900.0))]
    cells.append(CellSpec("node-1", SideSpec(lognormal(rng, 2.0, 0.05, 8)), SideSpec(lognormal(rng, 1.5, 0.05, 8)),
                          test="volume-churn", params={"backend": "x", "count": 5}, metric="provisioned_makespan_s",
                          unit="s", higher_is_better=False, tool="podtax", campaign="cp"))
    con = store.cursor()
    insert_cells(con, cells)
    con.execute("UPDATE runs SET env = CASE env WHEN 'host' THEN 'kubernetes' ELSE 'nomad' END WHERE campaign = 'cp'")
    yield TestClient(create_app(store))
    store.close()


def _json(client, campaign: str) -> dict[str, dict]:
    return {c["id"]: c for c in client.get(f"/api/campaigns/{campaign}/comparisons").json()["cells"]}


def _tables(client, campaign: str, tmp_path) -> tuple[list[dict], list[dict]]:
    zipped = zipfile.ZipFile(io.BytesIO(client.get(f"/api/campaigns/{campaign}/export.zip").content))
    rows = list(csv.DictReader(io.StringIO(zipped.read("comparisons.csv").decode())))
    pq = zipfile.ZipFile(io.BytesIO(client.get(f"/api/campaigns/{campaign}/export.zip",
                                               params={"format": "parquet"}).content))
    (tmp_path / "c.parquet").write_bytes(pq.read("comparisons.parquet"))
    con = duckdb.connect()
    cur = con.execute(f"SELECT * FROM '{(tmp_path / 'c.parquet').as_posix()}'")
    names = [d[0] for d in cur.description]
    return rows, [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _sheet(client, campaign: str) -> list[dict]:
    wb = openpyxl.load_workbook(io.BytesIO(client.get(f"/api/campaigns/{campaign}/export.xlsx").content))
    rows = list(wb["summary"].iter_rows(values_only=True))
    at = next(i for i, r in enumerate(rows) if list(r[:len(COMPARISON_HEADERS)]) == COMPARISON_HEADERS)
    return [dict(zip(COMPARISON_HEADERS, r, strict=False)) for r in rows[at + 1:] if r[0]]


@pytest.mark.parametrize("campaign", ["two", "cp"])
def test_tables_say_the_cluster_and_the_sides_as_the_json(client, campaign, tmp_path):
    cells = _json(client, campaign)
    rows, parquet = _tables(client, campaign, tmp_path)
    for table in (rows, parquet):
        assert {r["id"]: (r["cluster"], r["baseline"], r["candidate"]) for r in table} == \
            {i: (c["cluster"], c["baseline"], c["candidate"]) for i, c in cells.items()}
    sheet = _sheet(client, campaign)
    assert sorted((r["cluster"], r["ratio"]) for r in sheet) == \
        sorted((c["cluster"], c["ratio"]) for c in cells.values())
    if campaign == "two":  # two rows that differ by cluster, not only by their hash
        assert {r["cluster"] for r in rows} == {"east", "west"}
    else:
        assert {(r["baseline"], r["candidate"]) for r in rows} == {("kubernetes", "nomad")}
