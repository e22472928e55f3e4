"""A large SIMULATED campaign plans, runs, resumes after a SIGKILL of the runner and is cancelled; nothing
lost or duplicated (issue 12 item 2). 10,000 runs here; `make faults` runs the 100,000-run one."""

from __future__ import annotations

from pathlib import Path

from tests.faults.scenario_big_campaign import scenario


async def test_a_10k_run_campaign_resumes_and_is_cancelled(nats_url: str, tmp_path: Path) -> None:
    out = await scenario(nats_url, tmp_path, nodes=20, reps=125)
    assert out["planned"] >= 10_000 and out["killed_at_runs"] < 8_000
    assert out["duplicates"] == 0 and out["lost"] == 0 and out["unplanned"] == 0 and out["in_flight"] == 0
    assert out["cancelled"] > 0
    assert out["results"] + out["failures"] + out["cancelled"] == out["planned"]
