"""SIGKILL of the host agent mid-run (issue 12, item 1): the benchmark dies with it, and the
redelivered run does not overlap the first one."""

from __future__ import annotations

from pathlib import Path

from tests.faults.scenario_agent_orphan import scenario


async def test_sigkill_of_the_agent_leaves_no_orphan_and_no_overlap(nats_url: str, tmp_path: Path) -> None:
    out = await scenario(nats_url, tmp_path)
    assert out["first_run_processes"] >= 3 and out["orphans"] == 0, out
    assert out["results"] == 1 and out["duplicates"] == 0 and out["lost"] == 0, out
    assert out["second_run_timed_out"] and not out["overlap"], out
    assert out["left_in_group"] == 0
