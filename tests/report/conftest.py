"""Fixtures of the report tests: synthetic campaigns in a real DuckDB file, served by the real
analyzer app (uvicorn on a free port in a thread), so the CLI and a browser fetch over HTTP."""

from __future__ import annotations

import csv
import io
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, redirect_stdout
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
import pytest
import uvicorn
from fastapi import FastAPI

sys.path.insert(0, str(Path(__file__).parents[1] / "analysis"))

from analysis_synth import CellSpec, SideSpec, fixture_campaign, insert_cells, lognormal  # noqa: E402
from podtax import events, natsserver  # noqa: E402
from podtax.cli.main import main  # noqa: E402
from podtax.derive import derive  # noqa: E402
from podtax_analyzer.api import create_app  # noqa: E402
from podtax_analyzer.store import Store  # noqa: E402

NODES = ("node-1", "node-2", "node-3")


def steady_campaign(name: str, *, pod_factor: float = 1.0, seed: int = 5) -> list[CellSpec]:
    """Three nodes x two tests with low noise; the pod side multiplied by ``pod_factor``. The same
    seed gives the same values whatever the name, so two names hold the same runs."""
    rng = np.random.default_rng(seed)
    cells = []
    for node in NODES:
        for test, metric, unit, hib, median in (("sysbench-cpu", "events_per_sec", "events/s", True, 1000.0),
                                               ("fio", "read_iops", "IO/s", True, 5000.0)):
            host = lognormal(rng, median, 0.004, 20)
            pod = lognormal(rng, median * 0.97, 0.004, 20) * pod_factor
            params = {"threads": 2, "time": 10} if test == "sysbench-cpu" else {"rw": "randread", "bs": "4k"}
            cells.append(CellSpec(node, SideSpec(host), SideSpec(pod), test=test, params=params, metric=metric,
                                  unit=unit, higher_is_better=hib, tool=test.split("-")[0], campaign=name))
    return cells


def headline(cells: list[dict]) -> list[dict]:
    """The API's cells the matrix shows: each (test, params)'s primary metric, or all its metrics when
    none is primary (as podtax_analyzer.report_data.headline_cells)."""
    with_primary = {(c["test"], c["params"]) for c in cells if c["primary"]}
    return [c for c in cells if c["primary"] or (c["test"], c["params"]) not in with_primary]


def exported_verdicts(app: FastAPI, campaign: str, tmp: Path) -> dict[str, tuple[str, str, str, str]]:
    """Metric -> (the workbook table's verdict column, comparisons.csv's verdict and direction, comparisons.parquet's
    direction), each fetched from the app's export routes (one node, so one row per metric)."""
    import zipfile

    import duckdb
    from fastapi.testclient import TestClient

    client = TestClient(app)
    cells = workbook_cells(io.BytesIO(client.get(f"/api/campaigns/{campaign}/export.xlsx").content))
    book = {m: c["verdict"] for m, c in cells.items()}
    files = {}
    for fmt in ("csv", "parquet"):
        zipped = client.get(f"/api/campaigns/{campaign}/export.zip", params={"format": fmt}).content
        files[fmt] = zipfile.ZipFile(io.BytesIO(zipped)).read(f"comparisons.{fmt}")
    table = {r["metric"]: r for r in csv.DictReader(io.StringIO(files["csv"].decode()))}
    (tmp / "c.parquet").write_bytes(files["parquet"])
    parquet = dict(duckdb.connect().execute(f"SELECT metric, direction FROM '{(tmp / 'c.parquet').as_posix()}'"
                                            ).fetchall())
    return {m: (book[m], table[m]["verdict"], table[m]["direction"], parquet[m]) for m in book}


def insert_control_plane(con, name: str = "cp", objects: int = 5) -> int:
    """A volume-churn campaign, kubernetes against nomad, with per-object phase latencies in the
    analyzer's phases table (Nomad has no bound phase). Returns the number of phase rows."""
    rng = np.random.default_rng(11)
    cells = [CellSpec("node-1", SideSpec(lognormal(rng, 2.0, 0.05, 8)), SideSpec(lognormal(rng, 1.5, 0.05, 8)),
                      test="volume-churn", params={"backend": "x", "count": objects},
                      metric="provisioned_makespan_s", unit="s", higher_is_better=False, tool="podtax",
                      campaign=name)]
    insert_cells(con, cells)
    # insert_cells names the sides host/kubernetes; here they are kubernetes (baseline) and nomad
    con.execute("UPDATE runs SET env = CASE env WHEN 'host' THEN 'kubernetes' ELSE 'nomad' END WHERE campaign = $1",
                [name])
    runs = con.execute("SELECT run_id, env, params_key FROM runs WHERE campaign = $1", [name]).fetchall()
    rows = []
    for run_id, env, key in runs:
        phases = ("accepted", "provisioned", "bound", "deleted") if env == "kubernetes" else \
            ("accepted", "provisioned", "deleted")
        for k in range(objects):
            for ph in phases:
                rows.append((run_id, name, "local", "node-1", env, env, "volume-churn", key, f"obj-{k}", ph,
                             0.01 * k, float(rng.lognormal(-3, 0.3))))
    con.executemany("INSERT INTO phases (run_id, campaign, cluster, node, env, backend, test, params_key, object, "
                    "phase, start_s, latency_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return len(rows)


class Served:
    def __init__(self, store: Store, url: str) -> None:
        self.store, self.url = store, url


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    path = tmp_path_factory.mktemp("report") / "podtax.duckdb"
    store = Store(path)
    con = store.cursor()
    insert_cells(con, fixture_campaign())
    insert_cells(con, steady_campaign("base"))
    insert_cells(con, steady_campaign("same"))
    insert_cells(con, steady_campaign("shifted", pod_factor=0.95))
    insert_control_plane(con)
    con.execute("""INSERT INTO host_facts VALUES ('hf-1', 'local', 'node-a', TIMESTAMPTZ '2025-01-06 07:00:00+00',
                   '6.1.0-28-amd64', 'Debian GNU/Linux 12 (bookworm)', 'AMD EPYC 7B13', 8, 'x86_64', '{}')""")
    con.execute("""INSERT INTO placements VALUES ('pl-1', TIMESTAMPTZ '2025-01-06 12:00:00+00', 'default', 'web-1',
                   'uid-1', 'node-b', 'sysbench-cpu', '[{"node": "node-b", "score": 87.5}, {"node": "node-a",
                   "score": 40.0}]', 'bound by benchmark score'),
                   ('pl-2', TIMESTAMPTZ '2025-01-06 12:00:00+00', 'default', 'other', 'uid-2', 'node-a',
                   'unrelated-test', '[]', 'not this campaign')""")
    with serve(create_app(store)) as url:
        yield Served(store, url)
    store.close()


@contextmanager
def serve(app: FastAPI, send_buffer: int | None = None) -> Iterator[str]:
    """The analyzer app served by uvicorn on a free loopback port in a thread; yields its URL. `send_buffer`: the
    kernel's send buffer of each connection (SO_SNDBUF, which an accepted socket takes from its listener; loopback's
    own grows to MBs, a link's stays far smaller)."""
    port = natsserver.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    sockets: list[socket.socket] = []
    if send_buffer is not None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        listener.bind(("127.0.0.1", port))
        sockets.append(listener)
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets or None}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the analyzer app did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        for listener in sockets:
            listener.close()


def timeline_run(run: events.RunSpec, text: str, started: datetime, seconds: float) -> list[events.Envelope]:
    """A control-plane run whose timeline ``text`` took ``seconds`` from ``started``: its raw log as the runner
    publishes it and the derived result, as the parser would."""
    log = events.RawLog(run=run, stdout=text, exit_code=0, started_at=started,
                        ended_at=started + timedelta(seconds=seconds))
    return [events.raw_log(log, "podtax/runner"), derive(log)]


@contextmanager
def serve_batches(folder: Path, batches: Iterable[list[events.Envelope]]) -> Iterator[str]:
    """A real DuckDB file in ``folder`` holding each batch written as the parser writes it, served by the
    analyzer app; yields its URL."""
    store = Store(folder / "podtax.duckdb")
    try:
        for batch in batches:
            store.write_batch(batch)
        with serve(create_app(store)) as url:
            yield url
    finally:
        store.close()


def served_campaigns(name: str, campaigns: Iterable[str],
                     events_of: Callable[[str, int], list[events.Envelope]]) -> Callable[..., Iterator[str]]:
    """A module fixture yielding the URL of the analyzer app serving ``campaigns``, each one's events
    ``events_of(campaign, month)`` a month apart from month 1 (serve_batches in a folder named ``name``)."""

    @pytest.fixture(scope="module")
    def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
        batches = (events_of(campaign, month) for month, campaign in enumerate(campaigns, start=1))
        with serve_batches(tmp_path_factory.mktemp(name), batches) as u:
            yield u

    return url


def cli_output(*argv: str) -> str:
    """What `podtax <argv>` printed; it must exit 0."""
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(list(argv)) == 0
    return buf.getvalue()


def json_cells(*argv: str) -> dict[str, dict]:
    """The cells of `podtax <argv> --json` (report or compare) by metric."""
    return {c["metric"]: c for c in json.loads(cli_output(*argv, "--json"))["cells"]}


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of an exported CSV file, by column."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def exported_comparisons(campaign: str, url: str, folder: Path) -> dict[str, dict[str, str]]:
    """`podtax export --csv` of ``campaign`` into ``folder``: the rows of its comparisons.csv by metric."""
    cli_output("export", campaign, "--csv", str(folder), "--api", url)
    return {r["metric"]: r for r in csv_rows(folder / "comparisons.csv")}


def phase_plot(html: str, phase: str) -> str:
    """The part of an HTML report's phase section about ``phase`` (its plot and caption)."""
    section = html[html.index('id="phases"'):]
    part = section[section.index(f"· {phase}</h3>"):]
    return part[:part.index("<h3")] if "<h3" in part else part


def workbook_cells(book: Path | io.BytesIO) -> dict[str, dict[str, Any]]:
    """The comparison table of an exported workbook's summary sheet: metric -> {column: value} (one node)."""
    from podtax_analyzer.workbook import TABLE_TITLE

    rows = list(openpyxl.load_workbook(book)["summary"].iter_rows(values_only=True))
    at = next(i for i, r in enumerate(rows) if r[0] == TABLE_TITLE) + 1
    return {r[rows[at].index("metric")]: dict(zip(rows[at], r, strict=True)) for r in rows[at + 1:] if r[0]}


def sheet_rows(book: Path, sheet: str) -> list[dict[str, Any]]:
    """The rows of a workbook's sheet under its header row, by column."""
    rows = list(openpyxl.load_workbook(book)[sheet].iter_rows(values_only=True))
    return [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
