"""`podtax retire NODE --before DATE` (list: --list, undo: --undo) through the CLI's main(argv) against the analyzer's
real app served on a free port with its bearer token, over a real DuckDB file; `podtax scores` then says on the node's
row that it counts only its runs since DATE and how many older runs the user retired, when. Usage mistakes are one
line and exit 2, and so are the analyzer's refusals of what the user typed (an unknown node or cluster, a date before
every run of the node, a node in two clusters without --cluster, an --undo of a node with no retired runs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from podtax import events
from podtax.cli.main import main
from podtax_analyzer import retired
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
    assert rows["n1"]["status"].startswith(f"used; counts only its runs since {shown}: 6 runs of this score before "
                                           f"{shown} retired by the user on {today} "), rows["n1"]
    assert rows["n1"]["status"].endswith(" (still stored; 6 runs of the node's, every test)"), rows["n1"]
    assert "retired" not in rows["n2"]["status"], rows["n2"]
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())  # a wrapped cell's lines, joined
    assert f"6 runs of this score before {shown} retired by the user on {today}" in text, text
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
    """An unknown node is a usage mistake (exit 2) naming the stored nodes, or the closest; no --force: a retirement
    counts by the runs' start times, so a node is retired once its runs are stored, leaving out the same runs."""
    assert main(["retire", "n9", "--before", "2026-01-01"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: POST /api/retired: 404 no run of node 'n9' is stored (the stored ones: n1, n2, n3): name "
                   "the node as its runs do (podtax results lists them); a node is retired once its runs are stored "
                   "(by their start times: retired later, the same runs are left out)\n"), err
    assert main(["retire", "n11", "--before", "2026-01-01"]) == 2
    assert "is stored (the closest stored: n1): name the node" in capsys.readouterr().err
    assert main(["retire", "n9", "--undo"]) == 2  # was exit 1, unlike POST's refusals
    err = " ".join(capsys.readouterr().err.split())
    assert "404 no runs of node 'n9' are retired" in err, err


def test_a_wrong_cluster_names_the_nodes_own(analyzer: datetime, capsys: pytest.CaptureFixture) -> None:
    """n1's runs are in cluster local: `--cluster east` says so and what to give, without the advice for a node whose
    runs are still to come (before, 'a node is retired once its runs are stored' followed)."""
    assert main(["retire", "n1", "--before", analyzer.isoformat(), "--cluster", "east"]) == 2
    assert capsys.readouterr().err == ("error: POST /api/retired: 404 no run of node 'n1' in cluster 'east' is stored "
                                       "(its runs are in cluster local): give --cluster local\n")
    assert main(["retire", "n9", "--before", analyzer.isoformat(), "--cluster", "east"]) == 2
    err = capsys.readouterr().err
    assert "404 no run of node 'n9' in cluster 'east' is stored (cluster 'east' has no runs; the clusters with " \
           "runs: local): name the node" in err, err


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
        assert main(["retire", "n1", "--undo"]) == 2  # the hint's command without --cluster: refused (was exit 1)
        assert capsys.readouterr().err == ("error: DELETE /api/retired: 422 node 'n1' has retired runs in clusters "
                                           "east, local: say which (--cluster east or --cluster local)\n")
        assert main(["retire", "n4", "--before", changed, "--cluster", "east"]) == 2  # east's nodes, not local's
        err = capsys.readouterr().err
        assert "404 no run of node 'n4' in cluster 'east' is stored (the stored ones: n1): name the node" in err, err
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


def test_a_date_before_every_run_of_the_node_retires_nothing_and_says_so(analyzer: datetime,
                                                                         capsys: pytest.CaptureFixture) -> None:
    """Before, `podtax retire n1 --before <a day before its first run>` answered 'its 0 runs ... count in no score'
    and exit 0, a retirement of nothing written (a typo, the wrong year): now one line naming its first run, exit 2."""
    first = analyzer - timedelta(hours=1)  # n1's first run
    assert main(["retire", "n1", "--before", (first - timedelta(days=1)).isoformat()]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: POST /api/retired: 422 no run of node 'n1' (cluster local) started before "
                   f"{first - timedelta(days=1):%Y-%m-%d %H:%M:%S} UTC (its first successful run started "
                   f"{first:%Y-%m-%d %H:%M:%S} UTC): nothing to retire; give the time the node changed, after its "
                   "first run (podtax results lists its runs); if older runs are still to be stored (an import, a "
                   "held outbox), retire once they are: by their start times the same runs are left out\n"), err
    assert main(["retire", "--list"]) == 0
    assert capsys.readouterr().out == "no node has retired runs\n"


def _n1_threads_2(start: datetime) -> list[events.ResultV1]:
    """5 runs of n1 under another score (threads=2): 3 before its change, 2 after."""
    n1 = history(start, start + timedelta(hours=1))
    return [events.result(r.data.model_copy(update={"run": r.data.run.model_copy(update={
        "params": {"threads": 2}, "run_id": f"n1-t2-{i}"})}), "test") for i, r in enumerate(n1[:3] + n1[6:8])]


def test_scores_say_each_scores_own_retired_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture) -> None:
    """n1's threads=1 score loses 6 of its 14 runs, its threads=2 score 3 of 5: each row says its own count (and the
    node's 9); before, both said the node's 9 (GET /api/retired gave one count a node)."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
    store = Store(tmp_path / "podtax.duckdb")
    store.write_batch(history(start, start + timedelta(hours=1)) + _n1_threads_2(start))
    with serve(create_app(store, TOKEN)) as url:
        monkeypatch.setenv("PODTAX_API_URL", url)
        monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
        assert main(["retire", "n1", "--before", (start + timedelta(hours=1)).isoformat()]) == 0
        capsys.readouterr()
        assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
        out = capsys.readouterr()
    store.close()
    said = {r["params_key"]: r["status"] for r in json.loads(out.out)["scores"] if r["node"] == "n1"}
    assert ": 6 runs of this score before " in said["threads=1"], said
    assert ": 3 runs of this score before " in said["threads=2"], said
    assert all(s.endswith("(still stored; 9 runs of the node's, every test)") for s in said.values()), said
    assert out.err == ""


def _without_scores(store: Store) -> FastAPI:
    """An analyzer older than per-score counts: the real app, /api/retired as before them: GET gives the rows without
    `scores`, POST writes a retirement of any date (none refused) and answers it without `scores`."""
    app = create_app(store, TOKEN)
    app.router.routes = [r for r in app.router.routes if getattr(r, "original_router", None) is not retired_router]
    app.get("/api/retired")(lambda: [{k: v for k, v in r.items() if k != "scores"}
                                     for r in retired.listed(store.cursor())])

    @app.post("/api/retired")
    def post(node: str, before: datetime, cluster: str = "local") -> dict[str, Any]:
        with store.rescoring() as con:
            con.execute("INSERT INTO retired VALUES (?, ?, ?, now())", [cluster, node, before])
            return {k: v for k, v in retired.listed(con, cluster, node)[0].items() if k != "scores"}
    return app


def test_an_older_analyzer_retiring_nothing_is_said_with_its_undo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture) -> None:
    """An analyzer older than the refusal of a date before every run of the node writes that retirement of no run:
    said (it was written, and how to remove it), exit 2; before, 'its 0 runs ... count in no score', exit 0."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
    store = Store(tmp_path / "podtax.duckdb")
    store.write_batch(history(start, start + timedelta(hours=1)))
    with serve(_without_scores(store)) as url:
        monkeypatch.setenv("PODTAX_API_URL", url)
        monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
        early = start - timedelta(days=1)
        assert main(["retire", "n1", "--before", early.isoformat()]) == 2
        out = capsys.readouterr()
        assert main(["retire", "n2", "--before", (start + timedelta(hours=1)).isoformat()]) == 0  # runs: as before
        assert capsys.readouterr().out.startswith("node n2 (cluster local): its 6 runs started before ")
        assert [(r["node"], r["runs"]) for r in retired.listed(store.cursor())] == [("n1", 0), ("n2", 6)]
    store.close()
    assert out.out == ""
    assert out.err == ("error: POST /api/retired: no run of node n1 (cluster local) started before "
                       f"{early:%Y-%m-%d %H:%M:%S} UTC, yet the analyzer at {url} (older than this podtax) stored "
                       "this retirement of none: `podtax retire n1 --undo --cluster local` removes it; give the time "
                       "the node changed, after its first run (podtax results lists its runs), and upgrade the "
                       "analyzer to this podtax's version\n"), out.err


def test_an_analyzer_without_per_score_counts_is_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture) -> None:
    """An analyzer whose GET /api/retired gives no `scores` (the real app, that route as before them: the rows
    without it): `podtax scores` still works, says the node's count on each row, and says once why, on stderr."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
    store = Store(tmp_path / "podtax.duckdb")
    store.write_batch(history(start, start + timedelta(hours=1)) + _n1_threads_2(start))
    retired.retire(store, "n1", start + timedelta(hours=1))
    with serve(_without_scores(store)) as url:
        monkeypatch.setenv("PODTAX_API_URL", url)
        monkeypatch.setenv("PODTAX_API_TOKEN", TOKEN)
        assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
        out = capsys.readouterr()
    store.close()
    said = [r["status"] for r in json.loads(out.out)["scores"] if r["node"] == "n1"]
    assert len(said) == 2 and all(": 9 of the node's runs (every test) before " in s for s in said), said
    assert out.err == (f"warning: the analyzer at {url} gives a retired node's count of runs for the node only (every "
                       "test), not each score's: upgrade it to this podtax's version for each score's\n"), out.err
