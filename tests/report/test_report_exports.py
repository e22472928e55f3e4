"""The workbook, the CSV/Parquet exports, the HTML file and `podtax compare`, each fetched by the
real CLI from the real analyzer app over HTTP and checked against the API's own figures."""

from __future__ import annotations

import io
import math
import re
from html import escape

import duckdb
import httpx
import openpyxl
import pytest
from podtax.cli.main import main
from podtax.flags import BLOCKING
from podtax_analyzer.workbook import COMPARISON_HEADERS, TABLE_TITLE

from tests.report.conftest import headline


def api(served, path: str, **params):
    resp = httpx.get(f"{served.url}{path}", params=params, timeout=120)
    resp.raise_for_status()
    return resp.json()


def cli(served, *args: str) -> int:
    return main([*args, "--api", served.url])


def close(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12))


def test_workbook_equals_api(served, tmp_path):
    out = tmp_path / "book.xlsx"
    assert cli(served, "export", "synthetic", "--xlsx", str(out)) == 0
    rep = api(served, "/api/campaigns/synthetic/comparisons")
    wb = openpyxl.load_workbook(out)
    nodes = sorted({c["node"] for c in rep["cells"]})
    assert wb.sheetnames == ["summary", *[f"node {n}" for n in nodes], "provenance"]
    ws = wb["summary"]
    header = [c.value for c in ws[4] if c.value is not None]
    assert header[4:] == sorted({c["node"] for c in headline(rep["cells"])})
    matrix = {}
    for row in ws.iter_rows(min_row=5, values_only=True):
        if row[0] is None:
            break
        for node, v in zip(header[4:], row[4:], strict=False):
            matrix[(row[0], row[1], node)] = v
    for c in headline(rep["cells"]):
        got = matrix[(c["test"], c["params"], c["node"])]
        if c["ratio"] is None:  # the cell says why, with the flags that withhold its verdict
            held = " ".join(f for f in c["flags"] if f in BLOCKING)
            assert got == (f"withheld ({held})" if held else "no ratio"), c
        else:
            assert close(got, c["ratio"]), c
    rows = ws.iter_rows(min_row=5, max_row=4 + len({k[:2] for k in matrix}), min_col=5)
    assert all(c.fill.fill_type in ("solid", "lightUp") for row in rows for c in row if c.value is not None)
    # the full comparison table follows the matrix
    start = next(r for r in range(1, ws.max_row + 1) if ws.cell(r, 1).value == TABLE_TITLE) + 1
    assert [c.value for c in ws[start]] == COMPARISON_HEADERS
    rows = list(ws.iter_rows(min_row=start + 1, values_only=True))
    assert len(rows) == len(rep["cells"])
    col = {h: i for i, h in enumerate(COMPARISON_HEADERS)}
    for row, c in zip(rows, rep["cells"], strict=True):
        said = c["direction"] or c["verdict"]  # the verdict as the sentence words it
        assert (row[col["node"]], row[col["metric"]], row[col["verdict"]]) == (c["node"], c["metric"], said)
        for h, k in (("ratio", "ratio"), ("CI low (95%)", "ci_low"), ("CI high (95%)", "ci_high"),
                     ("p adjusted", "p_adjusted")):
            assert close(row[col[h]], c[k]), (h, c)
        assert (row[col["flags"]] or "") == " ".join(c["flags"])
        assert isinstance(row[col["n baseline (runs)"]], int)
    # one sheet per node with every run's value, as numbers
    results = api(served, "/api/results", campaign="synthetic", limit=100000)
    for node in nodes:
        values = sorted(m["value"] for r in results if r["node"] == node for m in r["metrics"])
        sheet = sorted(r[8] for r in wb[f"node {node}"].iter_rows(min_row=2, values_only=True))
        assert sheet == pytest.approx(values, rel=1e-13)  # xlsx keeps 15 significant digits
        assert {r[5] for r in wb[f"node {node}"].iter_rows(min_row=2, values_only=True)} == {"host", "pod"}


def test_parquet_and_csv_equal_the_tables(served, tmp_path):
    pq, csv = tmp_path / "pq", tmp_path / "csv"
    assert cli(served, "export", "synthetic", "--parquet", str(pq)) == 0
    assert cli(served, "export", "synthetic", "--csv", str(csv)) == 0
    assert sorted(p.name for p in pq.iterdir()) == ["comparisons.parquet", "metrics.parquet", "phases.parquet",
                                                       "runs.parquet"]
    assert sorted(p.name for p in csv.iterdir()) == ["comparisons.csv", "metrics.csv", "phases.csv", "runs.csv"]
    con = served.store.cursor()
    for table, query in (("runs", "SELECT * FROM runs WHERE campaign = 'synthetic'"),
                         ("metrics", "SELECT m.* FROM metrics m JOIN runs r USING (run_id) "
                                     "WHERE r.campaign = 'synthetic'")):
        f = (pq / f"{table}.parquet").as_posix()
        n = con.execute(f"SELECT count(*) FROM ({query})").fetchone()[0]
        assert n > 0 and con.execute(f"SELECT count(*) FROM '{f}'").fetchone()[0] == n
        diff = con.execute(f"SELECT count(*) FROM (({query}) EXCEPT ALL (SELECT * FROM '{f}'))").fetchone()[0]
        assert diff == 0, table
        assert con.execute(f"SELECT count(*) FROM read_csv('{(csv / f'{table}.csv').as_posix()}')").fetchone()[0] == n
    rep = api(served, "/api/campaigns/synthetic/comparisons")
    got = con.execute(f"SELECT id, ratio, ci_low, verdict, flags FROM '{(pq / 'comparisons.parquet').as_posix()}'"
                      ).fetchall()
    want = [(c["id"], c["ratio"], c["ci_low"], c["verdict"], c["flags"]) for c in rep["cells"]]
    assert got == want


def test_a_folder_export_refuses_a_name_that_is_no_regular_file(served, tmp_path, capsys):
    """--csv DIR: a file of the export's names that is a symbolic link (or FIFO) is refused before anything is
    written (the rename used to replace the link); a regular file of that name is replaced."""
    out, elsewhere = tmp_path / "csv", tmp_path / "elsewhere.csv"
    out.mkdir()
    elsewhere.write_text("keep")
    (out / "runs.csv").symlink_to(elsewhere)
    (out / "metrics.csv").write_text("old")
    capsys.readouterr()
    assert cli(served, "export", "synthetic", "--csv", str(out)) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {out / 'runs.csv'} exists and is not a regular file (a symbolic link, device, FIFO or " \
                  f"socket); give another file name", err
    assert sorted(p.name for p in out.iterdir()) == ["metrics.csv", "runs.csv"] and elsewhere.read_text() == "keep"
    assert (out / "metrics.csv").read_text() == "old"
    (out / "runs.csv").unlink()
    assert cli(served, "export", "synthetic", "--csv", str(out)) == 0
    assert (out / "metrics.csv").read_text().startswith("run_id")


def test_html_file_is_self_contained(served, tmp_path):
    out = tmp_path / "report.html"
    assert cli(served, "report", "synthetic", "--html", str(out)) == 0
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html
    assert "<script" not in html and "://" not in html and "@import" not in html
    links = re.findall(r'(?:href|src)="([^"]*)"', html)
    assert links and all(u.startswith(("#", "data:")) for u in links), "every asset inline, every link an anchor"
    rep = api(served, "/api/campaigns/synthetic/comparisons")
    for c in rep["cells"]:
        for flag in c["flags"]:
            assert escape(c["flag_details"][flag]) in html  # every flag as a plain sentence


def _compare(served, capsys, base: str, new: str) -> dict:
    import json

    capsys.readouterr()
    assert cli(served, "compare", base, new, "--json") == 0
    return json.loads(capsys.readouterr().out)


def test_compare_same_runs_finds_no_difference(served, capsys):
    data = _compare(served, capsys, "base", "same")
    assert len(data["cells"]) == 6 and not data["only_in_base"] and not data["only_in_new"]
    for c in data["cells"]:
        assert c["diff"] == 0.0 and c["diff_ci_low"] <= 0 <= c["diff_ci_high"]
        assert c["verdict"] == "no detectable difference", c["sentence"]


def test_compare_finds_a_planted_five_percent_shift(served, capsys):
    data = _compare(served, capsys, "base", "shifted")
    assert len(data["cells"]) == 6
    for c in data["cells"]:
        assert c["verdict"] == "worsened", c["sentence"]
        assert c["change_ci_high"] < 0.99 and math.isclose(c["change"], 0.95, rel_tol=0.01)
        assert c["diff_ci_high"] < 0 and c["p_adjusted"] < 0.05


def test_compare_table_and_report_section(served, capsys):
    capsys.readouterr()
    assert cli(served, "compare", "base", "shifted") == 0
    out = capsys.readouterr().out
    assert "worsened" in out and "node-3" in out
    html = httpx.get(f"{served.url}/report/shifted", params={"compare": "base"}, timeout=120).text
    assert 'id="compare"' in html and html.count("worsened") >= 6


@pytest.mark.parametrize("json_out", [False, True])
def test_compare_with_no_cell_in_common_says_so_and_exits_3(served, capsys, json_out):
    """Campaigns on other nodes share no cell: an empty table and exit 0 read as 'nothing changed' (audit)."""
    from podtax.cli.compare import NO_COMMON_CELL

    capsys.readouterr()
    assert cli(served, "compare", "synthetic", "base", *(["--json"] if json_out else [])) == NO_COMMON_CELL == 3
    out, err = capsys.readouterr()
    assert err == ("error: synthetic and base have no cell in common (no node, test, params and metric in both; "
                   "10 only in synthetic, 6 only in base): nothing to compare\n"), err
    if json_out:
        import json

        assert json.loads(out)["cells"] == []  # the answer stays JSON for scripts
    else:
        assert out == "", "no empty table"
    html = httpx.get(f"{served.url}/report/synthetic", params={"compare": "base"}, timeout=120).text
    assert "base and synthetic have no cell in common (node, test, params and metric): nothing to compare" in html


@pytest.mark.parametrize("args", [["export", "synthetic"], ["export", "synthetic", "--xlsx", "a.xlsx", "--csv", "d"],
                                  ["compare", "base"], ["report", "synthetic", "--html", "x.html", "--db", "y"]])
def test_usage_mistakes_exit_2(served, capsys, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert cli(served, *args) == 2
    err = capsys.readouterr().err.strip()
    assert err and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert not list(tmp_path.iterdir()), "nothing written"


def test_unknown_campaign_is_one_clear_line(served, capsys, tmp_path):
    capsys.readouterr()
    assert cli(served, "export", "nope", "--xlsx", str(tmp_path / "x.xlsx")) == 1
    err = capsys.readouterr().err
    assert "unknown campaign 'nope'" in err and not (tmp_path / "x.xlsx").exists()
    assert cli(served, "compare", "base", "nope") == 1
    assert "unknown campaign 'nope'" in capsys.readouterr().err


def test_export_zip_route_rejects_bad_format(served):
    assert httpx.get(f"{served.url}/api/campaigns/synthetic/export.zip", params={"format": "xls"}).status_code == 422
    body = httpx.get(f"{served.url}/api/campaigns/synthetic/export.xlsx").content
    assert openpyxl.load_workbook(io.BytesIO(body))["summary"]["A1"].value.startswith("podtax campaign synthetic")
    assert duckdb  # the Parquet checks above read with DuckDB



def streamed(served, monkeypatch, spool: int, path: str, **params) -> tuple[httpx.Response, list[int]]:
    """GET `path` from the app with CHUNK 1 KiB and SPOOL `spool`; the response, and the sizes of the body pieces
    the app sent (as the server gets them)."""
    from fastapi.testclient import TestClient
    from podtax_analyzer import exports
    from podtax_analyzer.api import create_app

    monkeypatch.setattr(exports, "CHUNK", 1024, raising=False)  # HEAD had neither
    monkeypatch.setattr(exports, "SPOOL", spool, raising=False)
    app, bodies = create_app(served.store), []

    async def spied(scope, receive, send):
        async def spy(message):
            if message["type"] == "http.response.body":
                bodies.append(len(message.get("body", b"")))
            await send(message)
        await app(scope, receive, spy)

    resp = TestClient(spied).get(path, params=params)
    assert resp.status_code == 200 and int(resp.headers["content-length"]) == len(resp.content) == sum(bodies)
    return resp, bodies


@pytest.mark.parametrize("spool", [1, 1 << 20], ids=["on-disk", "in-memory"])
def test_export_zip_is_streamed_in_chunks_with_the_same_files(served, monkeypatch, spool):
    """The zip is sent in CHUNK-sized pieces from a temporary file (a 1M-result campaign's zip was one 27 MB
    response body held in memory), with its length, and holds the same files, byte for byte, as export_zip."""
    import zipfile

    from podtax_analyzer.comparisons import compare_campaign
    from podtax_analyzer.exports import export_zip

    resp, bodies = streamed(served, monkeypatch, spool, "/api/campaigns/synthetic/export.zip", format="csv")
    assert len(bodies) > 1 and max(bodies) <= 1024, bodies
    con = served.store.cursor()
    want = zipfile.ZipFile(io.BytesIO(export_zip(con, compare_campaign(con, "synthetic"), "csv")))
    got = zipfile.ZipFile(io.BytesIO(resp.content))
    assert got.namelist() == want.namelist() == ["runs.csv", "metrics.csv", "phases.csv", "comparisons.csv"]
    assert all(got.read(name) == want.read(name) for name in want.namelist())


def test_html_report_is_streamed_in_chunks_as_the_page(served, monkeypatch):
    """The HTML page is sent in pieces from a temporary file (a 20k-cell campaign's 104 MB page took ~480 MB more
    than its data as one string), as text/html; charset=utf-8, and is render_html's page, byte for byte."""
    from podtax_analyzer.html_report import render_html
    from podtax_analyzer.report_data import load_report_data

    resp, bodies = streamed(served, monkeypatch, 1, "/report/synthetic")
    assert len(bodies) > 1 and max(bodies) <= 1024, bodies
    assert resp.headers["content-type"] == "text/html; charset=utf-8"
    page = render_html(load_report_data(served.store.cursor(), "synthetic"))
    stamp = re.compile(r"Generated [0-9: -]+UTC")  # the minute it was made
    assert stamp.sub("", resp.text) == stamp.sub("", page) and "</body></html>" in page


def test_csv_rows_keep_their_order_past_one_row_group(tmp_path):
    """runs.csv and metrics.csv are sorted (runs by start then id, metrics by run id and name) however many rows:
    the ORDER BY inside the CSV's text wrapping was lost past a row group (122,880 rows) when DuckDB ran it on two
    threads, while the Parquet files kept it."""
    import csv as csv_module
    import sys
    from pathlib import Path

    from podtax_analyzer import duckcon
    from podtax_analyzer.exports import write_exports
    from podtax_analyzer.report_models import CampaignReport

    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    from bench_comparisons import build

    build(tmp_path / "rows.duckdb", 300_000, 100)
    con = duckcon.connect(tmp_path / "rows.duckdb", read_only=True)
    con.execute("SET threads = 2")  # one thread keeps the order: the machine that showed it had two cores
    report = CampaignReport(campaign="bench", threshold=0.01, correction="holm", cells=[], summary=[])
    write_exports(con, report, tmp_path / "csv", "csv")
    with (tmp_path / "csv" / "metrics.csv").open() as f:
        ids = [row[0] for row in csv_module.reader(f)][1:]
    assert len(ids) == 300_000 and ids == sorted(ids)
    with (tmp_path / "csv" / "runs.csv").open() as f:
        runs = [(row["started_at"], row["run_id"]) for row in csv_module.DictReader(f)]
    assert runs == sorted(runs)
    con.close()


def test_csv_rows_are_in_the_order_of_the_stored_values(tmp_path):
    """runs.csv is ordered by start, then run id as stored, as runs.parquet: it was ordered by the written text,
    where run id '+b' is "'+b" (formula-guarded) and came before '(a' started at the same time."""
    import csv as csv_module
    import sys
    from pathlib import Path

    from podtax_analyzer import duckcon
    from podtax_analyzer.exports import FORMULA_FIRST, write_exports
    from podtax_analyzer.report_models import CampaignReport

    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    from bench_comparisons import build

    build(tmp_path / "ids.duckdb", 4, 4)  # r0..r3, all started at the same time
    con = duckcon.connect(tmp_path / "ids.duckdb")
    for run_id in ("+b", "(a"):
        con.execute("INSERT INTO runs SELECT * REPLACE ($1 AS run_id, $1 AS event_id) FROM runs WHERE run_id = 'r0'",
                    [run_id])
    report = CampaignReport(campaign="bench", threshold=0.01, correction="holm", cells=[], summary=[])
    write_exports(con, report, tmp_path / "csv", "csv")
    write_exports(con, report, tmp_path / "parquet", "parquet")
    parquet = con.execute(f"SELECT * FROM '{tmp_path / 'parquet' / 'runs.parquet'}'")
    columns, ids = [d[0] for d in parquet.description], [row[0] for row in parquet.fetchall()]
    con.close()
    assert ids == ["(a", "+b", "r0", "r1", "r2", "r3"]
    with (tmp_path / "csv" / "runs.csv").open() as f:
        rows = list(csv_module.reader(f))
    assert rows[0] == columns  # __pos is not written
    assert [row[0] for row in rows[1:]] == [f"'{i}" if i[0] in FORMULA_FIRST else i for i in ids]  # before: "'+b" first
