"""A tool executable built for another architecture than its kernel runs natively (an x86_64 sysbench on an arm64 Pi,
through binfmt_misc and qemu-user) measures the emulator, 5-20x slow, not the node. Its provenance block names both
(`machine`: the kernel's `uname -m`; `tool_arch`: the executable's ELF header): the analyzer flags such a run
EMULATED, its node score EMULATED (the scheduler's default ignore_flags keep it out of the ranking), `podtax scores`
says why and the campaign report's cell is CONFOUNDED (no ratio) saying which runs. An armhf build on an arm64
kernel, or an i386 one on x86_64, is native. The ARM headers are Debian 12's sysbench executables' first bytes
(tests/unit/test_tool_arch.py); the x86-64 one is this machine's sysbench."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from podtax import benchwrap, events
from podtax.archfamily import emulated
from podtax.cli.scores import status
from podtax.derive import derive
from podtax_analyzer.campaign_compare import compare_campaigns
from podtax_analyzer.reparse import reparse
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store
from tool_arch_synth import CAPTURE, cell_flags, eps_scores, run_result

ARMHF = bytes.fromhex("7f454c4601010100000000000000000003002800010000009d65000034000000788b020000040005340020000a00"
                      "28001d001c00")
ARM64 = bytes.fromhex("7f454c460201010000000000000000000300b70001000000009a00000000000040000000000000"
                      "00f06403000000000000000000400038000a0040001c001b00")
I386 = bytes.fromhex("7f454c46010101000000000000000000020003000100000000000000")  # e_machine 3 (EM_386)


@pytest.mark.parametrize(("head", "machine", "want"), [
    (ARM64, "aarch64", False), (ARMHF, "aarch64", False), (ARMHF, "armv7l", False), (I386, "x86_64", False),
    ("sysbench", "x86_64", False),
    ("sysbench", "aarch64", True),  # this machine's x86-64 sysbench on an arm64 Pi: qemu-x86_64
    ("sysbench", "armv7l", True), (ARM64, "x86_64", True), (ARM64, "armv7l", True), (ARMHF, "x86_64", True),
    (ARM64, None, False), (b"#!/bin/sh\n", "aarch64", False),  # unknown: never told emulated
    # a 32-bit process's personality, maybe on a 64-bit kernel, and a 32-bit kubelet's label (the scheduler's
    # kubernetes.io/arch): the family's 64-bit build may be native; another family's never is
    (ARM64, "armv8l", False), ("sysbench", "i686", False), (ARM64, "arm", False), ("sysbench", "arm", True),
    ("sysbench", "arm64", True), (ARM64, "amd64", True), (ARMHF, "riscv64", True)],
    ids=["arm64", "armhf-on-arm64", "armhf", "i386-on-x86_64", "x86_64", "x86_64-on-arm64", "x86_64-on-armv7l",
         "arm64-on-x86_64", "arm64-on-armv7l", "armhf-on-x86_64", "no-machine", "script", "armv8l", "i686",
         "label-arm", "x86_64-label-arm", "label-arm64", "label-amd64", "riscv64"])
def test_an_executable_of_another_architecture_than_its_kernel_runs_emulated(
        tmp_path: Path, head: bytes | str, machine: str | None, want: bool) -> None:
    if isinstance(head, str):
        path = shutil.which(head)
        assert path and benchwrap.elf_arch(path) == "x86_64", path  # the real tool here is x86-64
    else:
        (tmp_path / "sysbench").write_bytes(head)
        path = str(tmp_path / "sysbench")
    assert emulated(benchwrap.elf_arch(path), machine) is want


def test_a_nodes_score_from_an_emulated_tool_is_flagged(tmp_path: Path) -> None:
    """Node pi ran an x86_64 sysbench on its arm64 kernel (qemu-user), pj its arm64 build, pk the armhf one (native):
    only pi's runs carry the EMULATED run flag and only its score the EMULATED flag; the service's cache gives the same
    scores publication by publication and at a restart."""
    stdout = CAPTURE.read_text()
    fields = {"pi": {"machine": "aarch64", "tool_arch": "x86_64"}, "pj": {"machine": "aarch64", "tool_arch": "aarch64"},
              "pk": {"machine": "aarch64", "tool_arch": "arm"}}
    results = [run_result(10 * k + i, "host", f, stdout, node) for k, (node, f) in enumerate(fields.items())
               for i in range(6)]
    store = Store(tmp_path / "podtax.duckdb")
    try:
        cache = ScoreCache()
        published = {}
        for batch in (results[:9], results[9:]):  # pj's runs in both
            store.write_batch(batch)
            published.update(eps_scores(cache.update(store, [r.data.run.run_id for r in batch])))
        scores = eps_scores(node_scores(store.cursor()))
        restored = eps_scores(ScoreCache().restore(store, []))
        flagged = dict(store.cursor().execute(
            "SELECT node, count(*) FILTER (WHERE len(list_filter(flags, lambda f: starts_with(f, 'EMULATED: the "
            "tool''s executable is built for x86_64, the kernel is aarch64'))) > 0) FROM runs GROUP BY node"
        ).fetchall())
    finally:
        store.close()
    assert flagged == {"pi": 6, "pj": 0, "pk": 0}
    assert {n: (s.n, s.tool_archs, s.flags) for n, s in scores.items()} == {
        "pi": (6, ["x86_64"], ["EMULATED"]), "pj": (6, ["aarch64"], []), "pk": (6, ["arm"], [])}
    assert published == scores == restored


EMU = {"machine": "aarch64", "tool_arch": "x86_64"}  # an amd64 build through qemu-user on the arm64 node


@pytest.mark.parametrize(("host", "pod", "words"), [
    (EMU, EMU, ["8 host runs ran a tool executable through an emulator", "8 pod runs ran"]),
    ({"machine": "aarch64", "tool_arch": "aarch64"}, EMU,
     ["host runs' executables were built for aarch64 and pod runs' for x86_64", "8 pod runs ran a tool executable "
      "through an emulator (\"EMULATED: the tool's executable is built for x86_64, the kernel is aarch64"]),
    (EMU, [], ["Not comparable: 8 host runs ran a tool executable through an emulator (\"EMULATED: the tool's "
               "executable is built for x86_64, the kernel is aarch64", "so its host median (703.5 events/s) measured "
               "the emulator, not the node"])],
    ids=["both-sides", "pod-side", "host-only"])
def test_a_cell_of_emulated_runs_gives_no_ratio(tmp_path: Path, host: dict[str, str] | list[dict[str, str]],
                                               pod: dict[str, str] | list[dict[str, str]], words: list[str]) -> None:
    """The campaign report: a cell whose runs measured an emulator, on both sides alike too, or on the one side it
    has (no pod runs), is CONFOUNDED (no ratio), and says which runs and why."""
    flags, why, _, _ = cell_flags(tmp_path, host, pod)
    assert "CONFOUNDED" in flags, flags
    for said in words:
        assert said in why, why


def test_podtax_scores_says_an_emulated_score_is_ignored() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    score = {"updated_at": (now - timedelta(hours=1)).isoformat(), "n": 8, "median": 90.0, "ci_low": 85.0,
             "ci_high": 95.0, "flags": ["EMULATED"], "tool_archs": ["x86_64"]}
    assert status(score, now, 86400.0) == ("ignored: flagged EMULATED (tool executables built for x86_64 ran "
                                           "through an emulator, qemu-user, on this node: install its native build)")


def test_runs_stored_before_the_flag_get_it_from_podtax_reparse(tmp_path: Path) -> None:
    """Runs an analyzer before this flag stored (their logs' blocks named x86_64 on aarch64, no run flag): `podtax
    reparse` derives them again from their raw logs and stores them flagged, so their score says EMULATED."""
    before = benchwrap.render("before", {"tool_version": "sysbench 1.0.20", "machine": "aarch64",
                                         "tool_arch": "x86_64"})
    logs = [events.RawLog(run=events.RunSpec(run_id=f"r{i}", campaign="c", node="pi", env="host", test="sysbench-cpu",
                                             params={"threads": 1, "max_prime": 10000}, timeout_s=60),
                          stdout=CAPTURE.read_text(), stderr=f"{before}\n", exit_code=0,
                          started_at=datetime(2026, 12, 1, 8, i, tzinfo=UTC),
                          ended_at=datetime(2026, 12, 1, 8, i, 10, tzinfo=UTC)) for i in range(3)]
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch([events.raw_log(log, "test") for log in logs] + [derive(log) for log in logs])
        store.cursor().execute("UPDATE runs SET flags = []")  # as an analyzer before EMULATED stored them
        assert [s.flags for s in eps_scores(node_scores(store.cursor())).values()] == [[]]
        reparse(store)
        (pi,) = eps_scores(node_scores(store.cursor())).values()
    finally:
        store.close()
    assert (pi.n, pi.tool_archs, pi.flags) == (3, ["x86_64"], ["EMULATED"])


def test_a_comparison_of_a_campaign_of_emulated_runs_gives_no_verdict(tmp_path: Path) -> None:
    """`podtax compare base new`, host runs only: base ran the Pi's native arm64 sysbench, new an amd64 image's
    x86_64 one through qemu-user. new's median is the emulator's: NEW:CONFOUNDED withholds the verdict, and its
    details say which runs ran emulated."""
    stdout = CAPTURE.read_text()
    results = []
    for camp, fields in (("base", {"machine": "aarch64", "tool_arch": "aarch64"}), ("new", EMU)):
        for i in range(8):
            result = run_result(i, "host", fields, stdout)
            late = timedelta(hours=2 if camp == "new" else 0)  # new's runs after base's: no OVERLAP
            data = result.data.model_copy(update={
                "run": result.data.run.model_copy(update={"run_id": f"{camp}-{i}", "campaign": camp}),
                "started_at": result.data.started_at + late, "ended_at": result.data.ended_at + late})
            results.append(result.model_copy(update={"data": data}))
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(results)
        change = compare_campaigns(store.cursor(), "base", "new")
    finally:
        store.close()
    row = next(c for c in change.cells if c.metric == "events_per_second")
    assert row.flags == ["NEW:CONFOUNDED"] and row.verdict == "inconclusive", (row.flags, row.verdict, row.sentence)
    said = row.flag_details["NEW:CONFOUNDED"]
    assert "8 host runs ran a tool executable through an emulator" in said, said


@pytest.mark.parametrize("flags", [["EMULATED"], ["CONFOUNDED", "EMULATED"]])
def test_podtax_scores_says_only_the_emulated_builds_of_a_score_ran_through_an_emulator(flags: list[str]) -> None:
    """A node whose runs used an arm64 sysbench and an x86_64 one (an amd64 image) on its aarch64 kernel: only the
    x86_64 runs were emulated, so the row does not say the aarch64 build ran through the emulator."""
    now = datetime(2026, 12, 1, tzinfo=UTC)
    score = {"updated_at": (now - timedelta(hours=1)).isoformat(), "n": 8, "median": 90.0, "ci_low": 85.0,
             "ci_high": 95.0, "flags": flags, "tool_archs": ["aarch64", "x86_64"]}
    said = status(score, now, 86400.0)
    assert said == (f"ignored: flagged {'/'.join(flags)} (its runs' tool executables were built for aarch64 + x86_64: "
                    "those of an architecture this node's kernel runs only through an emulator, qemu-user, measured "
                    "the emulator; install its native build)"), said
