"""Runs of sysbench's cpu test on an arm64 board with the provenance block a wrapper prints (`machine`, `tool_arch`
and the tool's version), through derive, and the campaign cell or node scores they give (real DuckDB, the analyzer's
compare_campaign): shared by test_tool_arch_confounded.py and test_emulated_tool.py. The stdout is a real sysbench
1.0.18 capture (tests/corpus/sysbench/sbc-orange-pi-zero2), its events per second stepped by run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from podtax import benchwrap, events
from podtax.derive import derive
from podtax_analyzer.comparisons import compare_campaign
from podtax_analyzer.store import Store

CAPTURE = Path(__file__).resolve().parents[1] / "corpus" / "sysbench" / "sbc-orange-pi-zero2" / "sysbench-cpu-1-thread"
T0 = datetime(2026, 12, 1, 8, tzinfo=UTC)


def run_result(i: int, env: str, fields: dict[str, str], stdout: str, node: str = "pi") -> events.ResultV1:
    run = events.RunSpec(run_id=f"r{i}", campaign="c", node=node, env=env, test="sysbench-cpu",
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


def cell_flags(tmp_path: Path, host: dict[str, str] | list[dict[str, str]],
               pod: dict[str, str] | list[dict[str, str]]) -> tuple[list[str], str, str, str]:
    """The cell of 8 host and 8 pod runs; a list gives each run's fields in turn (a history across an upgrade)."""
    stdout = CAPTURE.read_text()
    hosts, pods = (x if isinstance(x, list) else [x] * 8 for x in (host, pod))
    results = ([run_result(i, "host", f, stdout) for i, f in enumerate(hosts)]
               + [run_result(len(hosts) + i, "kubernetes", f, stdout) for i, f in enumerate(pods)])
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(results)
        cell = next(c for c in compare_campaign(store.cursor(), "c").cells if c.metric == "events_per_second")
    finally:
        store.close()
    return cell.flags, cell.flag_details.get("CONFOUNDED", ""), cell.host_tool_version, cell.pod_tool_version


def eps_scores(scores: list[events.NodeScore]) -> dict[str, events.NodeScore]:
    return {s.node: s for s in scores if s.metric == "events_per_second"}
