"""A pod running a 32-bit (armv7) image on an arm64 node runs other code than the node's 64-bit tool of the same
version (sysbench's cpu test's 64-bit `%` is a library call on 32-bit ARM; its memory test moves 32-bit words): its
"pod tax" is then the code's difference. Each run's provenance block names its kernel (`machine`) and its tool's
executable (`tool_arch`, from the ELF header); derive names a tool not of its kernel's architecture in the run's tool
build, and the analyzer's CONFOUNDED compares the builds of a cell's sides. Raw logs through derive (the parser's
function), a real DuckDB file and the analyzer's report: the stdout is a real sysbench 1.0.18 cpu capture from an
arm64 board (tests/corpus/sysbench/sbc-orange-pi-zero2, its events per second stepped by run so the sides vary),
the block lines are benchwrap.render's, with the fields the wrapper prints on such a node (no ARM machine here)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from podtax import benchwrap, events
from podtax.derive import derive
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.store import Store

CAPTURE = Path(__file__).resolve().parents[1] / "corpus" / "sysbench" / "sbc-orange-pi-zero2" / "sysbench-cpu-1-thread"
T0 = datetime(2026, 12, 1, 8, tzinfo=UTC)
ARM64 = {"machine": "aarch64", "tool_arch": "aarch64"}  # a 64-bit tool on the arm64 node
ARMV7 = {"machine": "aarch64", "tool_arch": "arm"}  # a 32-bit tool on the same node (armv7 image, 32-bit OS)
OLD = {}  # an older wrapper or agent: neither field


def _log(i: int, env: str, fields: dict[str, str], stdout: str) -> events.ResultV1:
    run = events.RunSpec(run_id=f"r{i}", campaign="c", node="pi", env=env, test="sysbench-cpu",
                         params={"threads": 1, "max_prime": 10000}, timeout_s=60)
    before = benchwrap.render("before", {"tool_version": "sysbench 1.0.18 (using system LuaJIT 2.1.0-beta3)",
                                         "kernel": "6.1.0", "hw_threads": "4", **fields})
    stderr = f"{before}\n{benchwrap.render('after', {})}\n"
    start = T0 + timedelta(minutes=i)
    log = events.RawLog(run=run, stdout=stdout.replace("705.24", f"{700 + i:.2f}"), stderr=stderr, exit_code=0,
                        started_at=start, ended_at=start + timedelta(seconds=10))
    result = derive(log)
    assert isinstance(result, events.ResultV1), result
    return result


def _cell(tmp_path: Path, host: dict[str, str], pod: dict[str, str]) -> tuple[list[str], str, str, str]:
    stdout = CAPTURE.read_text()
    results = [_log(i, "host", host, stdout) for i in range(8)] + [_log(8 + i, "kubernetes", pod, stdout)
                                                                     for i in range(8)]
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(results)
        cell = next(c for c in compare_campaign(store.cursor(), "c").cells if c.metric == "events_per_second")
    finally:
        store.close()
    return cell.flags, cell.flag_details.get("CONFOUNDED", ""), cell.host_tool_version, cell.pod_tool_version


@pytest.mark.parametrize(("host", "pod", "foreign"), [(ARM64, ARMV7, "pod"), (ARMV7, ARM64, "host")])
def test_a_tool_of_another_architecture_on_one_side_is_confounded(tmp_path: Path, host: dict[str, str],
                                                                  pod: dict[str, str], foreign: str) -> None:
    flags, why, host_build, pod_build = _cell(tmp_path, host, pod)
    assert "CONFOUNDED" in flags, flags
    assert "arm executable, aarch64 kernel" in (pod_build if foreign == "pod" else host_build)
    assert "arm executable" not in (host_build if foreign == "pod" else pod_build)
    assert "arm executable, aarch64 kernel" in why and "may come from the tool" in why, why


@pytest.mark.parametrize(("host", "pod"), [(ARM64, ARM64), (ARMV7, ARMV7), (ARM64, OLD),
                                           ({"machine": "armv7l", "tool_arch": "arm"}, OLD)])
def test_the_same_code_on_both_sides_or_unknown_is_not(tmp_path: Path, host: dict[str, str],
                                                       pod: dict[str, str]) -> None:
    flags, _, host_build, pod_build = _cell(tmp_path, host, pod)
    assert "CONFOUNDED" not in flags, (flags, host_build, pod_build)
    assert host_build == pod_build
