"""SIGKILL of the host agent mid-run (issue 12, item 1): the benchmark dies with it (or is reaped by
the restarted agent, for fio's job process that leaves the group), and the redelivered run does not
overlap the first one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.scenario_agent_orphan import TOOLS, scenario


@pytest.mark.parametrize("tool", sorted(TOOLS))
async def test_sigkill_of_the_agent_leaves_no_orphan_and_no_overlap(nats_url: str, tmp_path: Path, tool: str) -> None:
    out = await scenario(nats_url, tmp_path, tool)
    assert out["first_run_processes"] >= TOOLS[tool][2] and out["orphans"] == 0, out
    assert out["results"] == 1 and out["duplicates"] == 0 and out["lost"] == 0, out
    assert out["second_run_timed_out"] and not out["overlap"], out
    assert out["left_in_group"] == 0 and out["left_marked"] == 0, out
