"""At its byte cap (spool.MAX_BYTES, 64 MiB) `<spool>/measured/` makes room for a new timeline by pruning the oldest
files that may be pruned (of reported runs, no DELETE_REFUSED result pending), each named in the log; the timeline
goes to the log only when pruning all of those would not make room, and then none is pruned.

Before (stop 53's note): at the cap every new timeline went to the log ('... holds 67108000 bytes already: run ...'s
measured timeline goes to the log') while older, reported runs' files stayed. Real nats-server, kubesim (RBAC's 403 on
delete fails the run) and ControlPlaneExecutor; the folder filled with sparse files (their size, no disk)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest
from podtax import events
from podtax_runner.controlplane.pending import SUFFIX
from podtax_runner.controlplane.retention import measured_name, prune, to_make_room
from podtax_runner.spool import MAX_BYTES

from tests.controlplane.conftest import cluster, reports, spec

MIB = 2**20


def planted(folder: Path, run_id: str, size: int, age_s: float, name: str = "") -> Path:
    """A kept timeline of `run_id` (or named `name`) of `size` bytes (sparse), its time `age_s` ago."""
    path = folder / (name or f"old.{run_id}.{'0' * 16}.jsonl")
    with path.open("wb") as f:
        f.truncate(size)
    t = time.time() - age_s
    os.utime(path, (t, t))
    return path


def test_a_full_folder_prunes_its_oldest_reported_timelines_to_keep_a_new_one(
        kubesim_factory: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="podtax.runner")
    folder = tmp_path / "spool" / "measured"
    folder.mkdir(parents=True)
    old = [planted(folder, f"r-{i}", size, 300 - i) for i, size in enumerate((22 * MIB, 22 * MIB, 20 * MIB - 1000))]
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {"forbid": ["delete persistentvolumeclaims"]}},
                          kubelet="none")
    run = spec("volume-churn", campaign="cap", count=10, concurrency=2, timeout=30)
    seen = asyncio.run(reports(tmp_path, sim, run))
    failed = next(e for _, e in seen if isinstance(e, events.RunFailedV1))
    kept = [p for p in folder.iterdir() if p.name.startswith("cap.")]
    assert len(kept) == 1 and f"is kept in {kept[0]}" in failed.data.detail, failed.data.detail  # before: the log
    assert not old[0].exists() and old[1].exists() and old[2].exists(), sorted(p.name for p in folder.iterdir())
    size = kept[0].stat().st_size
    assert f"pruned the measured timeline {old[0]}: to make room for a new timeline of {size:,} bytes (64 MiB in " \
        "all at most)" in caplog.text, caplog.text
    assert sum(p.stat().st_size for p in folder.iterdir()) <= MAX_BYTES


def test_a_new_timeline_goes_to_the_log_only_when_pruning_cannot_make_room(tmp_path: Path) -> None:
    """The oldest go first, just enough; files of unreported runs, with a result pending or of other names count but
    stay; when pruning every one that may be would not make room, none is pruned."""
    files = [("c.a.0000000000000000.jsonl", 1.0, 40), ("c.b.0000000000000000.jsonl", 2.0, 30),
             ("c.c.0000000000000000.jsonl", 3.0, 20), ("c.d.0000000000000000.jsonl", 4.0, 10), ("notes.txt", 0.0, 5)]
    used = sum(size for _, _, size in files)  # 105
    assert to_make_room(files, used, 10, [], cap=120) == []  # fits
    assert [n for n, _ in to_make_room(files, used, 30, [], cap=120)] == ["c.a.0000000000000000.jsonl"]
    assert [n for n, _ in to_make_room(files, used, 30, ["a"], cap=120)] == ["c.b.0000000000000000.jsonl"]
    assert [n for n, _ in to_make_room(files, used, 40, ["a"], ["c.b.0000000000000000.jsonl"], cap=120)] == [
        "c.c.0000000000000000.jsonl", "c.d.0000000000000000.jsonl"]
    assert to_make_room(files, used, 80, ["a"], cap=120) == []  # b, c and d free 60 of the 65 needed: none pruned
    # a file whose DELETE_REFUSED result is pending (its mark beside it) is never pruned for room
    folder = tmp_path / "measured"
    folder.mkdir()
    held = planted(folder, "held", MAX_BYTES - 100, 20)
    (folder / (held.name + SUFFIX)).write_text("{}")
    other = planted(folder, "other", 50, 10)
    assert prune(folder, 0, 0, [], room=1000) == [] and held.exists() and other.exists()
    assert prune(folder, 0, 0, [], room=50) == [other.name] and held.exists()


def test_a_resumed_runs_own_earlier_file_is_written_over_not_counted_when_making_room(
        kubesim_factory: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The run's own earlier file (an attempt before a restart) is written over, so it does not count toward the room
    to make: a new timeline that fits in its place prunes nothing. Before (review r2), keep_file left it out of the
    bytes used but retention.prune counted it: with 'own' 30 MiB, 'a' 20 MiB and 'b' 14 MiB - 1000 bytes, a
    timeline of a few KB pruned 'a', needlessly."""
    caplog.set_level(logging.INFO, logger="podtax.runner")
    folder = tmp_path / "spool" / "measured"
    folder.mkdir(parents=True)
    run = spec("volume-churn", campaign="cap", count=10, concurrency=2, timeout=30)
    own = planted(folder, "", 30 * MIB, 400, measured_name(run))
    a, b = planted(folder, "a", 20 * MIB, 300), planted(folder, "b", 14 * MIB - 1000, 200)
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {"forbid": ["delete persistentvolumeclaims"]}},
                          kubelet="none")
    seen = asyncio.run(reports(tmp_path, sim, run))
    failed = next(e for _, e in seen if isinstance(e, events.RunFailedV1))
    assert f"is kept in {own}" in failed.data.detail, failed.data.detail
    assert a.exists() and b.exists(), sorted(p.name for p in folder.iterdir())
    assert "pruned the measured timeline" not in caplog.text, caplog.text
    assert 1000 < own.stat().st_size < MIB  # written over by the new timeline
    assert sum(p.stat().st_size for p in folder.iterdir()) <= MAX_BYTES


def test_making_room_leaves_out_the_file_written_over(tmp_path: Path) -> None:
    """The probe of review r2: a new 30 MiB timeline for 'me' in place of its own 30 MiB file fits beside a and b."""
    folder = tmp_path / "measured"
    folder.mkdir()
    me = planted(folder, "me", 30 * MIB, 30)
    a, b = planted(folder, "a", 20 * MIB, 20), planted(folder, "b", 14 * MIB - 1000, 10)
    assert prune(folder, 0, 0, ["me"], room=30 * MIB, replacing=me.name) == [] and a.exists() and b.exists()
    assert prune(folder, 0, 0, ["me"], room=30 * MIB + 1001, replacing=me.name) == [a.name]  # a byte over
