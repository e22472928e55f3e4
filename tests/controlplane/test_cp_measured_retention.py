"""The runner prunes the timelines failed control-plane runs measured (`<spool>/measured/`, retention.py): older than
PODTAX_RUNNER_MEASURED_MAX_AGE_DAYS, or the oldest beyond PODTAX_RUNNER_MEASURED_MAX_FILES, when it starts and before
it writes one, each named in its log; never a file whose run is not reported yet. Before, nothing was ever pruned: a
long-lived runner's folder filled up to 64 MiB, and from then on every failed run's timeline went to the log only.
Real nats-server, kubesim (RBAC's 403 on delete fails the run), runner, parser and analyzer."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from podtax import config, subjects
from podtax.bus import Bus
from podtax.cli.main import main as cli
from podtax.config import RunnerSettings
from podtax_runner.controlplane.dispatch import ControlPlaneExecutor
from podtax_runner.controlplane.retention import prune, to_prune
from podtax_runner.service import serve

from tests.controlplane.conftest import NODE, cluster, ours
from tests.integration.harness import services, wait_for

DAY_S = 86400.0


def campaign(name: str, count: int) -> dict[str, Any]:
    return {"name": name, "nodes": [NODE], "environments": ["kubernetes"],
            "tests": [{"test": "volume-churn", "params": {"count": count, "concurrency": 2}}],
            "repetitions": {"min": 1, "max": 1}, "timeout": 120}


def plant(folder: Path, run_id: str, age_days: float, campaign: str = "old") -> Path:
    """A kept timeline of `run_id`, its file's time `age_days` ago."""
    path = folder / f"{campaign}.{run_id}.{'0' * 16}.jsonl"
    path.write_text('{"kind": "header"}\n')
    t = time.time() - age_days * DAY_S
    os.utime(path, (t, t))
    return path


async def submit(tmp_path: Path, doc: dict[str, Any]) -> None:
    path = tmp_path / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    for _ in range(50):  # again while the runner is still starting
        if await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"campaign {doc['name']} was not submitted")


def runner_settings(s: Any, sim: Any, spool: Path, **kw: Any) -> RunnerSettings:
    return s.settings(RunnerSettings, runner_kubeconfig=sim.kubeconfig, runner_spool_dir=str(spool), **kw)


async def test_the_runner_prunes_old_and_surplus_timelines_at_start_and_before_writing_one(
        nats_url: str, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="podtax.runner")
    sim = kubesim_factory({**cluster(), "faults": {"forbid": ["delete persistentvolumeclaims"]}}, kubelet="none")
    spool = tmp_path / "spool"
    measured = spool / "measured"
    measured.mkdir(parents=True)
    stale = plant(measured, "stale-0", 31)  # past the default 30 days
    fresh = [plant(measured, f"fresh-{i}", 5 - i) for i in range(3)]  # 5, 4 and 3 days old
    crashed, notes = measured / ".tmp-abc123", measured / "notes.txt"  # a crash's temporary file; the user's own
    crashed.write_text("half")
    notes.write_text("read")
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        await s.start("runner", serve, runner_settings(s, sim, spool, runner_measured_max_files=3))
        await wait_for(lambda: not stale.exists(), 30, "the start-up prune")
        assert all(p.exists() for p in fresh) and notes.exists() and not crashed.exists()  # 3 files: the limit
        await submit(tmp_path, campaign("cp-keep", 10))
        query = "SELECT status, failure_reason FROM runs WHERE campaign = 'cp-keep'"
        # failed, then its create and bind figures stored as a result flagged DELETE_REFUSED (it supersedes)
        await wait_for(lambda: s.query(query) == [("ok", None)], 90, "the run's result stored")
    left = sorted(p.name for p in measured.iterdir())
    kept = [n for n in left if n.startswith("cp-keep.")]
    assert len(kept) == 1 and left == sorted([*kept, fresh[1].name, fresh[2].name, "notes.txt"]), left
    assert f"pruned the measured timeline {stale}: older than 30 days" in caplog.text, caplog.text
    assert f"pruned the measured timeline {fresh[0]}: more than 3 files kept" in caplog.text, caplog.text
    assert f"removed {crashed}: a temporary file" in caplog.text


async def in_flight_run_id(nats_url: str, name: str) -> str:
    nc = await nats.connect(nats_url)
    try:
        kv = await nc.jetstream().key_value(subjects.RUNNER_BUCKET)
        for key in await kv.keys():
            if key.startswith(f"run.{name}."):
                doc = json.loads((await kv.get(key)).value)
                assert doc["status"] == "dispatched", doc
                return doc["run"]["run_id"]
    finally:
        await nc.close()
    raise AssertionError(f"no run of {name} in the runner's state")


async def test_a_restarted_runner_keeps_the_timeline_of_a_run_still_in_flight(
        nats_url: str, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The runner stops mid-run: its run stays in flight (not reported), and the next runner resumes it. A file of
    that run (an earlier attempt's, named in no failure yet) is not pruned however old; another one is."""
    caplog.set_level(logging.INFO, logger="podtax.runner")
    sim = kubesim_factory(cluster(provision=0.3, delete=0.05), kubelet="none")
    spool = tmp_path / "spool"
    measured = spool / "measured"
    measured.mkdir(parents=True)
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    limits = {"runner_measured_max_files": 1, "runner_measured_max_age_days": 1}
    async with services(nats_url, tmp_path) as s:
        await s.start("runner", serve, runner_settings(s, sim, spool, **limits))
        await submit(tmp_path, campaign("cp-held", 40))
        await wait_for(lambda: len(ours(sim, "persistentvolumeclaims")) >= 4, 60, "the run under way")
        await s.crash(s.tasks[-1])
        run_id = await in_flight_run_id(nats_url, "cp-held")
        mine = plant(measured, run_id, 40, "cp-held")
        other = plant(measured, "other-0", 2, "cp-held")
        await s.start("runner", serve, runner_settings(s, sim, spool, **limits))
        await wait_for(lambda: not other.exists(), 30, "the start-up prune")
        assert mine.exists(), caplog.text
    assert f"pruned the measured timeline {other}: older than 1 days" in caplog.text, caplog.text
    assert str(mine) not in caplog.text


def test_only_reported_runs_files_are_pruned_oldest_first() -> None:
    now = 1_000 * DAY_S
    files = [("c.a.0000000000000000.jsonl", now - 9 * DAY_S), ("c.b.0000000000000000.jsonl", now - 8 * DAY_S),
             ("c.c.0000000000000000.jsonl", now - 2 * DAY_S), ("c.d.0000000000000000.jsonl", now - 1 * DAY_S),
             ("notes.txt", now - 99 * DAY_S), (".tmp-x", now - 99 * DAY_S)]
    assert to_prune(files, now, 0, 0, []) == []  # no limits: as before
    assert [n for n, _ in to_prune(files, now, 0, 5, [])] == ["c.a.0000000000000000.jsonl",
                                                              "c.b.0000000000000000.jsonl"]
    assert [n for n, _ in to_prune(files, now, 0, 5, ["a"])] == ["c.b.0000000000000000.jsonl"]
    # 2 files at most: a (in flight) counts but stays, so b and c go
    assert [n for n, _ in to_prune(files, now, 2, 0, ["a"])] == ["c.b.0000000000000000.jsonl",
                                                                "c.c.0000000000000000.jsonl"]
    assert [n for n, _ in to_prune(files, now, 3, 0, [], adding=1)] == ["c.a.0000000000000000.jsonl",
                                                                       "c.b.0000000000000000.jsonl"]


@pytest.mark.parametrize(("name", "value", "said"), [
    ("PODTAX_RUNNER_MEASURED_MAX_FILES", "-1", "is below 0: set the most files to keep, or 0 for no limit"),
    ("PODTAX_RUNNER_MEASURED_MAX_AGE_DAYS", "-0.5", "is below 0: set the most days to keep, or 0 for no limit"),
    ("PODTAX_RUNNER_MEASURED_MAX_AGE_DAYS", "a month", "Input should be a valid number"),
])
def test_a_bad_limit_fails_at_start_naming_the_fix(monkeypatch: pytest.MonkeyPatch, name: str, value: str,
                                                   said: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(config.ConfigError) as err:
        config.load(RunnerSettings)
    assert f"{name}: {said}" in str(err.value), str(err.value)


async def test_no_file_of_a_run_in_flight_executing_or_held_in_the_outbox_is_pruned(nats_url: str,
                                                                                   tmp_path: Path) -> None:
    """The executor's unreported(): a real ControlPlaneExecutor whose state is set as launch(), _run() and
    Outbox.send() set it (no run is executed: labelled), then its prune with the tightest limits."""
    folder = tmp_path / "spool" / "measured"
    folder.mkdir(parents=True)
    kinds = ["flight", "stopping", "running", "held", "done-a", "done-b"]
    files = {k: plant(folder, k, 50, "c") for k in kinds}
    bus = await Bus.connect(nats_url, "test")
    cp = ControlPlaneExecutor(config.load(RunnerSettings, nats_url=nats_url, runner_spool_dir=str(tmp_path / "spool"),
                                          runner_measured_max_files=1, runner_measured_max_age_days=1), bus)
    try:
        cp.in_flight = lambda: {"flight"}  # the runner's state: dispatched, its report not stored
        cp.stops["stopping"] = ("c", threading.Event())  # launched, its task not ended
        cp.running["running"] = concurrent.futures.Future()  # its thread executing
        cp.outbox.held["held"] = "NATS did not answer"  # its failure (or DELETE_REFUSED result) not taken yet
        gone = await asyncio.to_thread(cp.prune_measured, cp.unreported())
    finally:
        cp.pool.shutdown()
        await bus.close()
    assert sorted(gone) == sorted([files["done-a"].name, files["done-b"].name])
    assert [k for k in kinds if files[k].exists()] == ["flight", "stopping", "running", "held"]


def prune_twice_at_once(folder: Path) -> list[list[str]]:
    """Each prune's names removed: two threads, started together, prune `folder` to 10 files with room for 1."""
    both, gone = threading.Barrier(2), [[], []]

    def go(k: int) -> None:
        both.wait()
        gone[k] = prune(folder, 10, 0, {"zz"}, 1)

    threads = [threading.Thread(target=go, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return gone


def test_two_prunes_at_once_say_nothing_of_a_file_the_other_pruned(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Two prunes of one folder at the same time (review r1): a file the other removed first is already pruned, not
    'left there'. Before, about 390 of 400 files were each warned 'could not prune ... left there'. Not certain to
    meet the race every round (threads), but 5 rounds of 400 files met it in every run tried."""
    caplog.set_level(logging.INFO, logger="podtax.runner")
    for round_ in range(5):
        folder = tmp_path / f"measured-{round_}"
        folder.mkdir()
        for i in range(400):
            plant(folder, f"r-{i}", 1 - i / 1000)
        gone = prune_twice_at_once(folder)
        assert len(gone[0]) + len(gone[1]) == 391 and not set(gone[0]) & set(gone[1]), gone
        assert len(list(folder.iterdir())) == 9
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not warned, warned[:3]
