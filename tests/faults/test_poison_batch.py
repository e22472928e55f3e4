"""The poison batch (issue 12, item 3): only the bad events reach the DLQ, each with its own reason."""

from __future__ import annotations

from pathlib import Path

from tests.faults.scenario_poison_batch import VALID, scenario


async def test_one_nan_and_one_unstorable_event_alone_go_to_the_dlq(nats_url: str, tmp_path: Path) -> None:
    out = await scenario(nats_url, tmp_path)
    assert out["results"] == VALID and out["duplicates"] == 0 and out["lost"] == 0
    assert out["dead_ids"] == ["nan-1.result", "u64-1.result"] and out["valid_in_dlq"] == 0
    assert out["bad_stored"] == 0
    nan_reason, u64_reason = sorted(out["reasons"], key=lambda r: "poison" in r)
    assert nan_reason.startswith("schema-invalid") and "metrics.0.value" in nan_reason and "finite" in nan_reason
    assert u64_reason.startswith("poison:") and "nr_throttled" in u64_reason
