"""A pod running a 32-bit (armv7) image on an arm64 node runs other code than the node's 64-bit tool of the same
version (sysbench's cpu test's 64-bit `%` is a library call on 32-bit ARM; its memory test moves 32-bit words): its
"pod tax" is then the code's difference. Each run's provenance block names its kernel (`machine`) and its tool's
executable (`tool_arch`, from the ELF header); the analyzer's CONFOUNDED compares the architectures of a cell's runs
that know it (the runs table's tool_arch), so a run of an older wrapper or agent (no field) is never a mismatch: a
32-bit Raspberry Pi OS (64-bit kernel) upgraded mid-history, or with an older pod wrapper, is not CONFOUNDED. The
tool build stays the tool's own. Raw logs through derive (the parser's
function), a real DuckDB file and the analyzer's report: the stdout is a real sysbench 1.0.18 cpu capture from an
arm64 board (tests/corpus/sysbench/sbc-orange-pi-zero2, its events per second stepped by run so the sides vary),
the block lines are benchwrap.render's, with the fields the wrapper prints on such a node (no ARM machine here)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store
from tool_arch_synth import CAPTURE, cell_flags, eps_scores, run_result

ARM64 = {"machine": "aarch64", "tool_arch": "aarch64"}  # a 64-bit tool on the arm64 node
ARMV7 = {"machine": "aarch64", "tool_arch": "arm"}  # a 32-bit tool on the same node (armv7 image, 32-bit OS)
OLD = {}  # an older wrapper or agent: neither field


@pytest.mark.parametrize(("host", "pod", "words"), [
    (ARM64, ARMV7, "host runs' executables were built for aarch64 and pod runs' for arm"),
    (ARMV7, ARM64, "host runs' executables were built for arm and pod runs' for aarch64"),
    ([ARM64] * 4 + [ARMV7] * 4, ARM64, "host runs mixed executables built for aarch64 + arm"),
    ([OLD] * 4 + [ARM64] * 4, ARMV7, "host runs' executables were built for aarch64 and pod runs' for arm")])
def test_a_tool_of_another_architecture_on_one_side_is_confounded(tmp_path: Path, host: object, pod: object,
                                                                  words: str) -> None:
    flags, why, host_build, pod_build = cell_flags(tmp_path, host, pod)  # type: ignore[arg-type]
    assert "CONFOUNDED" in flags, flags
    assert words in why and "may come from the tool" in why, why
    assert host_build == pod_build  # the tool's own build on both sides


@pytest.mark.parametrize(("host", "pod"), [
    (ARM64, ARM64), (ARMV7, ARMV7), (ARM64, OLD), ({"machine": "armv7l", "tool_arch": "arm"}, OLD),
    (ARMV7, OLD), (OLD, ARMV7),  # a 32-bit Raspberry Pi OS (64-bit kernel): a new agent, an old wrapper or the reverse
    ([OLD] * 4 + [ARMV7] * 4, ARMV7)],  # its host runs before and after the agent's upgrade
    ids=["arm64", "armv7", "arm64-old-pod", "armv7l-kernel-old-pod", "armv7-old-pod", "old-host-armv7-pod",
         "armv7-host-upgraded"])
def test_the_same_code_on_both_sides_or_unknown_is_not(tmp_path: Path, host: object, pod: object) -> None:
    flags, why, host_build, pod_build = cell_flags(tmp_path, host, pod)  # type: ignore[arg-type]
    assert "CONFOUNDED" not in flags, (flags, why, host_build, pod_build)
    assert host_build == pod_build


def test_a_nodes_score_across_the_agents_upgrade_is_not_confounded(tmp_path: Path) -> None:
    """A 32-bit Raspberry Pi OS node's host runs, 5 by the older agent (no fields) and 5 by the new one (arm on
    aarch64): one node score, not CONFOUNDED (the scheduler drops a CONFOUNDED node's score)."""
    stdout = CAPTURE.read_text()
    results = [run_result(i, "host", OLD if i < 5 else ARMV7, stdout) for i in range(10)]
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(results)
        scores = [s for s in node_scores(store.cursor()) if s.metric == "events_per_second"]
    finally:
        store.close()
    assert [(s.env, s.n) for s in scores] == [("host", 10)]
    assert "CONFOUNDED" not in scores[0].flags, scores[0].flags
    assert scores[0].tool_archs == ["arm"]  # the runs that name one


def test_a_nodes_score_over_runs_of_two_tool_architectures_is_confounded(tmp_path: Path) -> None:
    """Node pi's runs went from the arm64 sysbench to a 32-bit armhf one (an armv7 image) after 5 runs, and its last
    run is of the arm64 one again: the builds interleave, so one score mixes other code's figures. The analyzer flags
    it CONFOUNDED (the scheduler ignores CONFOUNDED evidence) and names both architectures; node pj, arm64
    throughout, is not flagged. The service's incremental cache gives the same scores publication by publication
    (its rows of new runs) and at a restart (its whole-key load). (A clean switch, every armhf run after every arm64
    one, is scored by the armhf runs alone: test_score_build_switch.py.)"""
    stdout = CAPTURE.read_text()
    first = [run_result(i, "host", ARM64, stdout) for i in range(5)] + [run_result(10 + i, "host", ARM64, stdout, "pj")
                                                                   for i in range(5)]
    then = [run_result(5 + i, "host", ARMV7 if i < 4 else ARM64, stdout) for i in range(5)] + [
        run_result(15 + i, "host", ARM64, stdout, "pj") for i in range(5)]
    store = Store(tmp_path / "podtax.duckdb")
    try:
        cache = ScoreCache()
        store.write_batch(first)
        before = eps_scores(cache.update(store, [r.data.run.run_id for r in first]))
        assert before["pi"].tool_archs == ["aarch64"] and before["pi"].flags == []
        store.write_batch(then)
        published = eps_scores(cache.update(store, [r.data.run.run_id for r in then]))
        scores = eps_scores(node_scores(store.cursor()))
        restored = eps_scores(ScoreCache().restore(store, []))
    finally:
        store.close()
    pi, pj = scores["pi"], scores["pj"]
    assert (pi.n, pi.tool_archs, pi.flags) == (10, ["aarch64", "arm"], ["CONFOUNDED"])
    assert (pj.n, pj.tool_archs, pj.flags) == (10, ["aarch64"], [])
    assert published == scores == restored


def test_a_file_made_before_runs_tool_arch_gives_scores_naming_no_architecture(tmp_path: Path) -> None:
    """A file made before runs.tool_arch (3a2d7335), read as it is (read-only: schema.sql's ALTER does not run): its
    node scores name no architecture and are not CONFOUNDED by it."""
    db = tmp_path / "older.duckdb"
    stdout = CAPTURE.read_text()
    store = Store(db)
    try:
        store.write_batch([run_result(i, "host", ARM64 if i % 2 else ARMV7, stdout) for i in range(8)])
    finally:
        store.close()
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE runs DROP COLUMN tool_arch")
    con.close()
    con = duckdb.connect(str(db), read_only=True)
    try:
        (pi,) = eps_scores(node_scores(con)).values()
    finally:
        con.close()
    assert (pi.n, pi.tool_archs, pi.flags) == (8, [], [])
