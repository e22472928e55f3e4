"""GET /api/placements and `podtax scores` (what the scheduler sees and decided), over a real DuckDB file.

The CLI's HTTP calls are routed to FastAPI's TestClient (labelled stand-in for the network; the routes,
the database and the CLI are the real ones)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
import numpy as np
import pytest
from analysis_synth import CellSpec, SideSpec, insert_cells
from fastapi import FastAPI
from fastapi.testclient import TestClient
from podtax.cli import results as results_cli
from podtax.cli.main import main
from podtax.cli.scores import status
from podtax.scheduler_profile import BenchmarkArgs
from podtax_analyzer.api_analysis import router

NOW = datetime(2026, 1, 10, tzinfo=UTC)
DAY = 86400.0


MEASURED = {"n": 8, "median": 1000.0, "ci_low": 990.0, "ci_high": 1010.0}


@pytest.mark.parametrize("updated,flags,measured,want", [
    (NOW - timedelta(hours=1), [], MEASURED, "used"),
    (NOW - timedelta(days=8), [], MEASURED, "ignored: older than the 168 h TTL (8.0 d)"),
    (NOW - timedelta(hours=1), ["BIMODAL", "THROTTLED"], MEASURED, "ignored: flagged BIMODAL/THROTTLED"),
    (NOW - timedelta(hours=1), ["OUTLIERS"], MEASURED, "used"),
    # the scheduler needs no minimum run count, but trusts a node with no interval less (scoring.py: shrunk, and a
    # noise band of 5% / sqrt(n))
    (NOW - timedelta(hours=1), [], {"n": 2, "median": 1000.0, "ci_low": None},
     "used, with no interval (2 runs): its median counts 2/(2+3), the rest is the group's median; 3.5% below "
     "it is within noise (5%/sqrt(2) by default)"),
    (NOW - timedelta(hours=1), [], {"n": 1, "median": 1000.0, "ci_low": None},
     "used, with no interval (1 run): its median counts 1/(1+3), the rest is the group's median; 5.0% below "
     "it is within noise (5%/sqrt(1) by default)"),
    (NOW - timedelta(hours=1), [], {"n": 8, "median": 0.0, "ci_low": 0.0},
     "ignored: its median is not a positive number"),
    # session 51: an interval reaching 0 bounds the speed by 0 (scoring.py point 4): used, but no reference
    (NOW - timedelta(hours=1), [], {"n": 7, "median": 1100.0, "ci_low": 0.0, "ci_high": 1200.0},
     "used, sets no reference: its 95% interval reaches 0 (lower end 0), so the scheduler bounds its speed by 0; "
     "its median is scored against the other nodes' bounds"),
    (NOW - timedelta(hours=1), [], {"n": 7, "median": 2.0, "ci_low": 1.5, "ci_high": None,
                                    "higher_is_better": False},
     "used, sets no reference: its 95% interval reaches 0 (no upper end), so the scheduler bounds its speed by 0; "
     "its median is scored against the other nodes' bounds"),
    (NOW - timedelta(hours=1), [], {"n": 7, "median": 2.0, "ci_low": 0.0, "ci_high": 2.5,
                                    "higher_is_better": False}, "used"),  # a duration's bound is 1/ci_high
])
def test_status_says_how_the_scheduler_treats_a_score(updated, flags, measured, want):
    assert status({"updated_at": updated.isoformat(), "flags": flags, **measured}, NOW, 7 * DAY) == want


def test_status_follows_the_profiles_benchmark_settings():
    args = BenchmarkArgs(no_interval_noise=0.02, shrink_runs=1, ignore_flags=["CONFOUNDED"])
    score = {"updated_at": (NOW - timedelta(hours=1)).isoformat(), "n": 4, "median": 1000.0, "ci_low": None,
             "ci_high": None, "flags": ["BIMODAL"]}  # BIMODAL is not among this profile's ignore_flags
    assert status(score, NOW, 7 * DAY, args) == (
        "used, with no interval (4 runs): its median counts 4/(4+1), the rest is the group's median; 1.0% below it "
        "is within noise (2%/sqrt(4), the profile's no_interval_noise)")
    assert status({**score, "flags": ["CONFOUNDED"]}, NOW, 7 * DAY, args) == "ignored: flagged CONFOUNDED"


class _Store:
    def __init__(self, con):
        self.con = con

    def cursor(self):
        return self.con.cursor()


@pytest.fixture
def client(con, monkeypatch):
    rng = np.random.default_rng(0)
    cells = [CellSpec(n, SideSpec(rng.normal(1000, 5, 8)), SideSpec(rng.normal(990, 5, 8)),
                      params={"threads": 1}, metric="events_per_second") for n in ("fresh", "old")]
    insert_cells(con, cells)
    con.execute("UPDATE runs SET ended_at = now() - INTERVAL 1 HOUR WHERE node = 'fresh'")
    for i, (node, msg) in enumerate([("fresh", "Successfully assigned default/p0 to fresh; ranked by ..."),
                                     (None, "0/2 nodes are available")]):
        con.execute("INSERT INTO placements VALUES (?, now() - to_seconds(?), 'default', ?, ?, ?, "
                    "'sysbench-cpu', ?, ?)",
                    [f"ev{i}", i, f"p{i}", f"uid{i}", node, json.dumps([{"node": "fresh", "score": 100.0}]), msg])
    app = FastAPI()
    app.state.store = _Store(con)
    app.include_router(router)
    tc = TestClient(app)

    def request(method, url, params=None, timeout=None, headers=None):
        return tc.request(method, httpx.URL(url).path, params=params, headers=headers)

    monkeypatch.setattr(results_cli.httpx, "request", request)
    monkeypatch.setenv("PODTAX_API_URL", "http://analyzer.test:8700")
    return tc


def test_placements_route_newest_first_and_filtered(client):
    got = client.get("/api/placements").json()
    assert [p["pod"] for p in got] == ["p0", "p1"]
    assert got[0]["candidates"] == [{"node": "fresh", "score": 100.0}] and got[1]["node"] is None
    assert [p["pod"] for p in client.get("/api/placements", params={"node": "fresh"}).json()] == ["p0"]
    assert len(client.get("/api/placements", params={"limit": 1}).json()) == 1


def test_scores_cli_shows_what_is_used_and_what_is_ignored(client, capsys):
    assert main(["scores", "--test", "sysbench-cpu", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_node = {s["node"]: s["status"] for s in out["scores"]}
    assert by_node["fresh"] == "used" and by_node["old"].startswith("ignored: older than the 168 h TTL")
    assert [p["pod"] for p in out["placements"]] == ["p0", "p1"]
    assert main(["scores"]) == 0
    text = capsys.readouterr().out
    assert "1 of 2 node scores are ignored by the scheduler" in text and "Successfully assigned" in text


def _few_and_zero(con):
    """Beside the fixture's 'fresh' (used) and 'old' (stale): 'few', 3 runs (no interval), and 'zero', 7 runs one of
    which measured 0 (its min..max interval reaches 0)."""
    insert_cells(con, [
        CellSpec("zero", SideSpec(np.full(7, 1000.0)), SideSpec(np.array([0.0, 990, 991, 992, 993, 994, 995])),
                 params={"threads": 1}, metric="events_per_second", campaign="z"),
        CellSpec("few", SideSpec(np.full(3, 1000.0)), SideSpec(np.array([980.0, 985, 990])),
                 params={"threads": 1}, metric="events_per_second", campaign="z")])
    con.execute("UPDATE runs SET ended_at = now() - INTERVAL 1 HOUR WHERE node IN ('zero', 'few')")


def test_scores_cli_says_what_the_scheduler_does_with_its_profile(con, client, capsys, tmp_path, monkeypatch):
    """The scheduler's profile sets its noise band (session 51): the CLI said the default 5%/sqrt(n) whatever the
    profile, called a score whose interval reaches 0 plain 'used' though it sets no reference, and counted every
    'used, ...' status as ignored in its text summary."""
    _few_and_zero(con)
    profile = tmp_path / "profile.yaml"
    profile.write_text("score:\n  BenchmarkScore: {no_interval_noise: 0.02, shrink_runs: 1}\n")
    monkeypatch.setenv("PODTAX_SCHEDULER_PROFILE", str(profile))
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
    said = {s["node"]: s["status"] for s in json.loads(capsys.readouterr().out)["scores"]}
    assert said["few"] == ("used, with no interval (3 runs): its median counts 3/(3+1), the rest is the group's "
                           "median; 1.2% below it is within noise (2%/sqrt(3), the profile's no_interval_noise)")
    assert said["zero"].startswith("used, sets no reference: its 95% interval reaches 0 (lower end 0)"), said
    assert said["fresh"] == "used" and said["old"].startswith("ignored: older than"), said
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    assert "1 of 4 node scores are ignored by the scheduler" in capsys.readouterr().out
    # --profile, as the scheduler takes it, before PODTAX_SCHEDULER_PROFILE
    other = tmp_path / "other.yaml"
    other.write_text("score:\n  BenchmarkScore: {no_interval_noise: 0.1}\n")
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0", "--profile", str(other)]) == 0
    said = {s["node"]: s["status"] for s in json.loads(capsys.readouterr().out)["scores"]}
    assert "5.8% below it is within noise (10%/sqrt(3), the profile's no_interval_noise)" in said["few"], said


def test_scores_cli_profile_weight_0_ignores_every_score(client, capsys, tmp_path):
    """A profile whose BenchmarkScore weight is 0: the scheduler ranks by no score (algorithm.decide skips a plugin
    of weight 0), so every row is ignored; the CLI said 'used' (review r7 on 9a3ed347)."""
    profile = tmp_path / "p.yaml"
    profile.write_text("score:\n  BenchmarkScore: {weight: 0}\n  LeastAllocated: {weight: 1}\n")
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0", "--profile", str(profile)]) == 0
    said = {s["node"]: s["status"] for s in json.loads(capsys.readouterr().out)["scores"]}
    assert set(said) == {"fresh", "old"} and all(
        v == "ignored: the profile's BenchmarkScore weight is 0, so the scheduler ranks by no benchmark score (the "
             "other score plugins, such as LeastAllocated, decide)" for v in said.values()), said
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0", "--profile", str(profile)]) == 0
    assert "2 of 2 node scores are ignored by the scheduler" in capsys.readouterr().out


def test_scores_cli_follows_the_profiles_statistic(con, client, capsys, tmp_path):
    """statistic: mean: the scheduler scores a node by its mean (scoring.BenchmarkScore._columns); the CLI judged
    the median, so 4 runs of 0 in 7 read 'ignored: its median is not a positive number' for a node the scheduler
    uses with its mean 426 (review r7 on 9a3ed347)."""
    insert_cells(con, [CellSpec("halfzero", SideSpec(np.full(7, 1000.0)),
                                SideSpec(np.array([0.0, 0, 0, 0, 990, 995, 1000])),
                                params={"threads": 1}, metric="events_per_second", campaign="z")])
    con.execute("UPDATE runs SET ended_at = now() - INTERVAL 1 HOUR WHERE node = 'halfzero'")
    profile = tmp_path / "p.yaml"
    profile.write_text("score:\n  BenchmarkScore: {statistic: mean, ignore_flags: [CONFOUNDED]}\n")
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0", "--profile", str(profile)]) == 0
    rows = {s["node"]: s for s in json.loads(capsys.readouterr().out)["scores"]}
    assert rows["halfzero"]["median"] == 0 and rows["halfzero"]["mean"] > 400, rows["halfzero"]
    assert rows["halfzero"]["status"] == (
        "used, sets no reference: its 95% interval reaches 0 (lower end 0), so the scheduler bounds its speed by 0; "
        "its mean (the profile's statistic) is scored against the other nodes' bounds"), rows["halfzero"]
    assert rows["fresh"]["status"] == "used: its mean (the profile's statistic)"
    # the table shows the figure the scheduler scores: the mean, under a column named so (it showed the median, 0)
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0", "--profile", str(profile)]) == 0
    out = capsys.readouterr().out
    assert _column(out, 3) == ("mean", f"{rows['halfzero']['mean']:,.4g} (runs in 2 modes)")
    assert _column(out, 4)[0] == "median's 95% CI", out  # the interval stays the median's (review r13)
    # the median (the default statistic): the same node's median 0 is no speed
    profile.write_text("score:\n  BenchmarkScore: {ignore_flags: [CONFOUNDED]}\n")
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0", "--profile", str(profile)]) == 0
    said = {s["node"]: s["status"] for s in json.loads(capsys.readouterr().out)["scores"]}
    assert said["halfzero"] == "ignored: its median is not a positive number" and said["fresh"] == "used", said
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0", "--profile", str(profile)]) == 0
    out = capsys.readouterr().out
    assert _column(out, 3) == ("median", "0 (runs in 2 modes)") and _column(out, 4)[0] == "95% CI", out


def test_scores_cli_says_which_scores_come_from_tools_of_other_architectures(con, client, capsys):
    """Node scores name their runs' tool architectures (runs.tool_arch). 'fresh' ran a 32-bit armhf sysbench, 'arm64'
    the arm64 one, 'older' an older wrapper (none named): the scheduler ranks nothing for a pod whose candidates' scores
    name two architectures on nodes of one kubernetes.io/arch (mixed_arch.py, BenchmarkMixedArch), so the rows of
    fresh and arm64 say so (used unless: the table cannot see the labels; the summary counts them apart from the
    ignored), older's does not;
    'mixed' ran both (CONFOUNDED: its status names them)."""
    rng = np.random.default_rng(1)
    insert_cells(con, [CellSpec(n, SideSpec(rng.normal(1000, 5, 8)), SideSpec(rng.normal(990, 5, 8)),
                                params={"threads": 1}, metric="events_per_second", campaign="z")
                       for n in ("arm64", "older", "mixed")])
    con.execute("UPDATE runs SET ended_at = now() - INTERVAL 1 HOUR WHERE node IN ('arm64', 'older', 'mixed')")
    con.execute("UPDATE runs SET tool_arch = 'arm' WHERE node = 'fresh' OR (node = 'mixed' AND sequence % 2 = 0)")
    con.execute("UPDATE runs SET tool_arch = 'aarch64' WHERE node = 'arm64' OR (node = 'mixed' AND sequence % 2 = 1)")
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
    rows = {s["node"]: s for s in json.loads(capsys.readouterr().out)["scores"]}
    assert {n: r["tool_archs"] for n, r in rows.items()} == {
        "arm64": ["aarch64"], "fresh": ["arm"], "mixed": ["aarch64", "arm"], "old": [], "older": []}
    said = {n: r["status"] for n, r in rows.items()}
    assert said["fresh"] == ("used unless ranked with nodes of its kubernetes.io/arch whose scores come from tool "
                             "executables built for another architecture (this node's: arm; aarch64 on arm64): the "
                             "scheduler then places by resources alone"), said
    assert said["arm64"].startswith("used unless ranked with nodes of its kubernetes.io/arch whose scores come from "
                                    "tool executables built for another architecture (this node's: aarch64; arm on "
                                    "fresh)"), said
    assert said["older"] == "used" and said["old"].startswith("ignored: older than"), said
    assert said["mixed"] == "ignored: flagged CONFOUNDED (its runs' tool executables were built for aarch64 + arm)"
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "2 of 5 node scores are ignored by the scheduler (see the last column)." in out, out
    assert ("2 of 5 node scores are ignored for a pod whose candidates of one kubernetes.io/arch were scored by tool "
            "executables built for different architectures (see the last column).") in out, out


def test_scores_cli_an_x86_and_pi_cluster_each_scored_by_its_native_build_is_used(con, client, capsys):
    """An x86 node's x86_64 sysbench and Pis' aarch64 one never run on one kind of machine, so never on nodes of one
    kubernetes.io/arch: the scheduler ranks them with no Warning and the rows say plain 'used' (they said 'used
    unless ranked with ...', and the summary '3 of 3 node scores are ignored for a pod ...'). An i386 build beside
    the x86_64 one may run on one kind of machine: those two rows are marked, naming only each other."""
    rng = np.random.default_rng(2)
    insert_cells(con, [CellSpec(n, SideSpec(rng.normal(1000, 5, 8)), SideSpec(rng.normal(990, 5, 8)),
                                params={"threads": 1}, metric="events_per_second", campaign="z")
                       for n in ("pi1", "pi2")])
    con.execute("UPDATE runs SET ended_at = now() - INTERVAL 1 HOUR WHERE node IN ('pi1', 'pi2')")
    con.execute("DELETE FROM runs WHERE node = 'old'")
    con.execute("UPDATE runs SET tool_arch = 'x86_64' WHERE node = 'fresh'")
    con.execute("UPDATE runs SET tool_arch = 'aarch64' WHERE node IN ('pi1', 'pi2')")
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
    said = {s["node"]: s["status"] for s in json.loads(capsys.readouterr().out)["scores"]}
    assert said == {"fresh": "used", "pi1": "used", "pi2": "used"}, said
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "ignored" not in out, out

    con.execute("UPDATE runs SET tool_arch = 'i386' WHERE node = 'pi2'")  # a 32-bit x86 build now
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
    said = {s["node"]: s["status"] for s in json.loads(capsys.readouterr().out)["scores"]}
    assert said["pi1"] == "used", said
    assert "(this node's: x86_64; i386 on pi2)" in said["fresh"] and "aarch64" not in said["fresh"], said
    assert "(this node's: i386; x86_64 on fresh)" in said["pi2"], said
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "2 of 3 node scores are ignored for a pod whose candidates of one kubernetes.io/arch" in out, out


def _column(out: str, k: int) -> tuple[str, str]:
    """The scores table's k-th column: its title and the row of node halfzero."""
    [title] = [x.split("┃")[k].strip() for x in out.splitlines() if "┃ node" in x]
    [value] = [x.split("│")[k].strip() for x in out.splitlines() if "│ halfzero" in x]
    return title, value


def test_scores_cli_bad_profile_is_one_line_exit_2(client, capsys, tmp_path, monkeypatch):
    bad = tmp_path / "bad.yaml"
    bad.write_text("score:\n  BenchmarkScore: {no_interval_noise: 2}\n")
    assert main(["scores", "--profile", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--profile {bad}: invalid profile" in err[0] and "0.5" in err[0], err
    monkeypatch.setenv("PODTAX_SCHEDULER_PROFILE", str(bad))
    assert main(["scores"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"PODTAX_SCHEDULER_PROFILE={bad}: invalid profile" in err[0], err


def test_scores_cli_missing_profile_names_the_option(client, capsys, tmp_path, monkeypatch):
    """A --profile FILE that does not exist: the fix is to leave out the option, not to 'unset it' (review r7)."""
    missing = tmp_path / "missing.yaml"
    assert main(["scores", "--profile", str(missing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--profile {missing}: cannot read the profile" in err[0], err
    assert "fix the path or leave out --profile to use the default weights" in err[0] and "unset" not in err[0], err
    monkeypatch.setenv("PODTAX_SCHEDULER_PROFILE", str(missing))  # the variable: unset it, as before
    assert main(["scores"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fix the path or unset it to use the default weights" in err[0], err


def test_scores_cli_usage_mistake_is_one_line_exit_2(client, capsys):
    assert main(["scores", "--env", "nomad"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--env" in err[0]


def test_scores_tables_of_two_parameter_sets_are_told_apart(con, client, capsys):
    rng = np.random.default_rng(1)
    insert_cells(con, [CellSpec("fresh", SideSpec(rng.normal(1900, 5, 8)), SideSpec(rng.normal(1890, 5, 8)),
                                params={"threads": 2}, metric="events_per_second", campaign="two")])
    con.execute("UPDATE runs SET ended_at = now() - INTERVAL 1 HOUR WHERE node = 'fresh'")
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    titles = [line.strip() for line in capsys.readouterr().out.splitlines() if "is better)" in line]
    assert len(titles) == len(set(titles)) == 2, titles
    assert any("[threads=1]" in t for t in titles) and any("[threads=2]" in t for t in titles), titles


def test_scores_table_writes_figures_of_1000_and_more_in_full(con, client, capsys):
    """`podtax scores` after a quick sysbench campaign showed 'median 1.266e+04' and '95% CI 9,063 – 1.764e+04' (the
    format {:,.4g}); the report writes such figures in full (report_render._value). Now so does the scores table."""
    insert_cells(con, [CellSpec("big", SideSpec(np.full(8, 9000.0)),
                                SideSpec(np.array([12000.0, 12300, 12500, 12600, 12700, 12900, 13100, 17640])),
                                params={"threads": 1}, metric="events_per_second", campaign="big")])
    con.execute("UPDATE runs SET ended_at = now() - INTERVAL 1 HOUR WHERE node = 'big'")
    assert main(["scores", "--test", "sysbench-cpu", "--json", "--placements", "0"]) == 0
    big = {s["node"]: s for s in json.loads(capsys.readouterr().out)["scores"]}["big"]
    assert main(["scores", "--test", "sysbench-cpu", "--placements", "0"]) == 0
    [row] = [x.split("│") for x in capsys.readouterr().out.splitlines() if "│ big" in x]
    assert row[3].strip() == f"{big['median']:,.0f}" == "12,650", row
    assert row[4].strip() == f"{big['ci_low']:,.0f} – {big['ci_high']:,.0f}", row
    assert "e+" not in "".join(row), row
