"""`podtax retire NODE --before DATE` (list: --list, undo: --undo) through the CLI's main(argv) against the analyzer's
real app served on a free port with its bearer token, over a real DuckDB file; `podtax scores` then says on the node's
row that it counts only its runs since DATE and how many older runs the user retired, when. Usage mistakes are one
line and exit 2; an unknown node is one clear line and exit 1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from podtax import events
from podtax.cli.main import main
from podtax_analyzer.api import create_app
from podtax_analyzer.api_retired import router as retired_router
from podtax_analyzer.store import Store

from tests.analysis.test_retired_runs import history
from tests.report.conftest import serve

TOKEN = "retire-cli-token"


@pytest.fixture
def analyzer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[datetime]:
    """The analyzer's app on a fresh history (n1 changed an hour after its first run, 3 hours ago: within the
    scheduler's TTL); yields that time."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
    store = Store(tmp_path / "podtax.duckdb")
    store.write_batch(history(start, start + timedelta(hours=1)))
    with serve(create_app(store, TOKEN)) as url:
        monkeypatch.setenv("PODTAX_API_URL", url)
        monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
        yield start + timedelta(hours=1)
    store.close()


def test_retire_list_scores_and_undo(analyzer: datetime, capsys: pytest.CaptureFixture) -> None:
    changed = analyzer.strftime("%Y-%m-%dT%H:%M:%S")
    shown = analyzer.strftime("%Y-%m-%d %H:%M:%S UTC")  # every time printed names its zone
    assert main(["retire", "n1", "--before", changed]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"node n1 (cluster local): its 6 runs started before {shown} count in no score from now "
                          "on (still stored"), out
    assert out.rstrip().endswith("`podtax retire n1 --undo --cluster local` counts them again"), out
    assert main(["retire", "--list"]) == 0
    assert capsys.readouterr().out.startswith(f"node n1 (cluster local): 6 runs started before {shown} retired on ")
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
    rows = {r["node"]: r for r in json.loads(capsys.readouterr().out)["scores"]}
    assert (rows["n1"]["n"], rows["n1"]["flags"]) == (8, []), rows["n1"]
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    # the count is the node's (every test and env), not this score's: said so
    assert rows["n1"]["status"].startswith(f"used; counts only its runs since {shown}: 6 of the node's runs (every "
                                           f"test) before {shown} retired by the user on {today} "), rows["n1"]
    assert rows["n1"]["status"].endswith(" (still stored)"), rows["n1"]
    assert "retired" not in rows["n2"]["status"], rows["n2"]
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())  # a wrapped cell's lines, joined
    assert f"6 of the node's runs (every test) before {shown} retired by the user on {today}" in text, text
    assert main(["retire", "n1", "--undo"]) == 0
    assert capsys.readouterr().out.startswith(f"node n1 (cluster local): every run counts again (6 runs started "
                                              f"before {shown}, retired on {today}")
    assert main(["retire", "--list"]) == 0
    assert capsys.readouterr().out == "no node has retired runs\n"
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
    rows = {r["node"]: r for r in json.loads(capsys.readouterr().out)["scores"]}
    assert rows["n1"]["n"] == 14 and "CONFOUNDED" in rows["n1"]["flags"], rows["n1"]


@pytest.mark.parametrize(("argv", "said"), [
    ([], "podtax retire: invalid value for 'node': give NODE and --before DATE (or --undo), or --list."),
    (["n1"], "podtax retire: invalid value for --before: give the time from which NODE's runs count"),
    (["n1", "--before", "last tuesday"], "podtax retire: invalid value for --before: 'last tuesday' is not a date "
                                         "or time: give one as e.g. 2026-11-30"),
    (["n1", "--before", "2999-01-01"], "podtax retire: invalid value for --before: 2999-01-01 is in the future"),
    (["n1", "--undo", "--before", "2026-01-01"], "podtax retire: invalid value for --undo: --undo takes no --before"),
    (["--list", "--undo"], "podtax retire: invalid value for --list: --list takes neither --before nor --undo"),
    (["n1_", "--before", "2026-01-01"], "podtax retire: invalid value for 'node': 'n1_' is not a node name"),
])
def test_usage_mistakes_are_one_line_and_exit_2(argv: list[str], said: str, capsys: pytest.CaptureFixture,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_API_URL", "http://127.0.0.1:9")  # never asked: refused before any request
    assert main(["retire", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1, err


def test_an_unknown_node_is_one_clear_line(analyzer: datetime, capsys: pytest.CaptureFixture) -> None:
    assert main(["retire", "n9", "--before", "2026-01-01"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "404 no run of node 'n9' is stored: name the node as its runs do (podtax results lists them)" in err, err
    assert main(["retire", "n9", "--undo"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "404 no runs of node 'n9' are retired" in err, err


def test_the_undo_hint_names_the_cluster_of_a_node_in_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture) -> None:
    """n1 has runs in clusters local and east: retired in both, `podtax retire n1 --undo` is refused (422); the
    hint printed by the retire names the cluster, and the command it gives works."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
    local = history(start, start + timedelta(hours=1))
    east = [events.result(r.data.model_copy(update={"run": r.data.run.model_copy(update={
        "cluster": "east", "run_id": "east-" + r.data.run.run_id})}), "test") for r in local if r.data.run.node == "n1"]
    store = Store(tmp_path / "podtax.duckdb")
    store.write_batch(local + east)
    changed = (start + timedelta(hours=1)).isoformat()
    with serve(create_app(store, TOKEN)) as url:
        monkeypatch.setenv("PODTAX_API_URL", url)
        monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
        assert main(["retire", "n1", "--before", changed, "--cluster", "local"]) == 0
        hint = capsys.readouterr().out
        assert main(["retire", "n1", "--before", changed, "--cluster", "east"]) == 0
        capsys.readouterr()
        assert main(["retire", "n1", "--undo"]) == 1  # the hint's command without --cluster: refused
        assert "422 node 'n1' has retired runs in clusters east, local" in " ".join(capsys.readouterr().err.split())
        assert hint.rstrip().endswith("`podtax retire n1 --undo --cluster local` counts them again"), hint
        assert main(["retire", "n1", "--undo", "--cluster", "local"]) == 0
        assert capsys.readouterr().out.startswith("node n1 (cluster local): every run counts again")
    store.close()


def test_an_analyzer_older_than_retire_is_said_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture) -> None:
    """An analyzer without /api/retired (the real app, its routes as before podtax retire): FastAPI answers 404
    'Not Found'; the CLI says the analyzer is older and must be upgraded, one line and exit 1, for each use."""
    store = Store(tmp_path / "podtax.duckdb")
    store.write_batch(history())
    app = create_app(store, TOKEN)
    app.router.routes = [r for r in app.router.routes if getattr(r, "original_router", None) is not retired_router]
    with serve(app) as url:
        monkeypatch.setenv("PODTAX_API_URL", url)
        monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
        for argv, method in ((["n1", "--before", "2026-11-02"], "POST"), (["n1", "--undo"], "DELETE"),
                             (["--list"], "GET")):
            assert main(["retire", *argv]) == 1
            err = capsys.readouterr().err
            assert err == (f"error: {method} /api/retired: 404 Not Found: the analyzer at {url} is older than `podtax "
                           "retire` (it has no /api/retired): upgrade it to this podtax's version\n"), err
        assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0  # nothing retired
    store.close()
