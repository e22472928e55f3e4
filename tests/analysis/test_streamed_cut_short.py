"""The streamed row routes (/api/runs, /api/results, phases: rowstream) answer 200 before their rows. A row that
failed while they were read (a stored row the model refuses, a DuckDB error) ended the answer as if it were whole:
Starlette's BaseHTTPMiddleware (the API's auth check) closed the chunked body properly over a JSON array cut short,
so curl exited 0 and `podtax results` said the analyzer 'answered HTTP 200 without JSON; is it the analyzer?'.
Now the auth check is plain ASGI and the connection drops (an incomplete chunked body, as any client sees), and the
CLI says the answer was cut short, printing none of it; a server or proxy that still ends such a body is told apart
from a web page. A real DuckDB file, the real app served by uvicorn, the CLI's entry point."""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store

from tests.analysis.analysis_synth import CellSpec, SideSpec, insert_cells
from tests.report.conftest import serve
from tests.unit.fake_http import serving

RUNS = 3_000  # three batches of rowstream.BATCH: the refused row is read after the first were sent


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = Store(tmp_path_factory.mktemp("cut") / "podtax.duckdb")
    con = store.cursor()
    half = np.arange(1.0, RUNS / 2 + 1)
    insert_cells(con, [CellSpec("n1", SideSpec(half), SideSpec(half), campaign="c1")])
    last = con.execute("SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1").fetchone()[0]
    con.execute("UPDATE runs SET params = '[1]' WHERE run_id = ?", [last])  # JSON, but no parameter set
    try:
        with serve(create_app(store)) as u:
            yield u
    finally:
        store.close()


@pytest.mark.parametrize("path", ["/api/runs", "/api/results"])
def test_a_failed_stream_is_not_a_whole_answer(url: str, path: str) -> None:
    with httpx.stream("GET", f"{url}{path}", params={"limit": RUNS}, timeout=60) as resp:
        assert resp.status_code == 200
        with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
            resp.read()


def test_the_cli_says_the_answer_was_cut_short(url: str, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_API_URL", url)
    assert main(["results", "--limit", str(RUNS), "--json"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err, err
    assert err.strip().splitlines() == [f"error: the analyzer at {url} stopped answering mid-request (peer closed "
                                        "connection without sending complete message body (incomplete chunked "
                                        "read)): it may have stopped or restarted (see its log), or the "
                                        "connection to it stalled or was too slow (it then ends the answer and its "
                                        "log says so); run the command again once it answers"], err


class _EndsCutJson(http.server.BaseHTTPRequestHandler):
    """A server (or proxy) that ends a chunked body properly over a JSON array cut short."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        part = b'[{"run_id": "r1", "campaign": "c1"},'
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(part), part))

    def log_message(self, *_: object) -> None:
        pass


def test_json_ended_short_is_said_cut_short_not_another_server(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    with serving(_EndsCutJson) as other:
        monkeypatch.setenv("PODTAX_API_URL", other)
        assert main(["results", "--json"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err, err
    assert err.strip().splitlines() == [f"error: the analyzer at {other} cut its answer short (36 bytes of JSON that "
                                        "is not whole): it failed while sending it (its log says why); nothing of "
                                        "it is shown: run the command again"], err
