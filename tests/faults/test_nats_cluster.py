"""Three clustered nats-servers, streams and KV replicated three ways; one server SIGKILLed mid-campaign
and restarted: every planned run ends as exactly one result or one recorded failure (issue 12 item 13)."""

from __future__ import annotations

from pathlib import Path

from tests.faults.scenario_nats_cluster import scenario


async def test_a_campaign_rides_through_the_death_of_one_of_three_servers(tmp_path: Path) -> None:
    out = await scenario(tmp_path, nodes=20, reps=10, spacing="0.1s")  # ~10 s: the kill lands mid-way
    assert out["replicas"] == {"PODTAX": 3, "KV_podtax_runner": 3}
    assert out["planned"] >= 800 and out["killed_at_runs"] < out["planned"]
    assert out["duplicates"] == 0 and out["lost"] == 0 and out["unplanned"] == 0 and out["in_flight"] == 0
    assert out["results"] + out["failures"] == out["planned"]
