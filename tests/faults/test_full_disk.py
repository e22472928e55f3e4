"""A full disk under the analyzer's data directory for 40 s mid-campaign (longer than the retries of a
message): no valid result is dead-lettered
or lost, none stored twice (issue 12, the fault suite). Needs root to mount a small tmpfs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults.scenario_full_disk import scenario


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
async def test_a_full_disk_loses_and_dead_letters_nothing(tmp_path: Path) -> None:
    out = await scenario(tmp_path, nodes=5, reps=20)
    if "skipped" in out:  # root without the right to mount (a container without CAP_SYS_ADMIN)
        pytest.skip(out["skipped"])
    assert out["filled_mb"] > 0
    assert out["dead_lettered"] == 0 and out["lost"] == 0 and out["duplicates"] == 0
    assert out["stored"] == out["planned"] == out["results"]
