"""A DELETE_REFUSED result is marked pending (controlplane/pending.py) before the run's failure is reported, so no
moment is left where the failure is recorded and the result in no mark: a runner stopped there lost it (the run
recorded as reported is not run again, its kept file pruned as any other). Before (stop 54's note), the mark was
written once the failure had been recorded as reported (ControlPlaneExecutor.on_reported, the runner's state saved),
after the timeline was parsed. Real nats-server, kubesim (RBAC's 403 on delete), the runner's control-plane
executor; on_reported stands for the runner's record of the report (Runner.on_reported) and looks at the folder."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import nats
import pytest
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax_runner import outbox
from podtax_runner.controlplane.dispatch import ControlPlaneExecutor
from podtax_runner.controlplane.pending import SUFFIX
from podtax_runner.service import serve

from tests.controlplane.conftest import cluster, spec
from tests.controlplane.test_cp_delete_refused_restart import QUERY, set_max_msg_size
from tests.controlplane.test_cp_measured_retention import campaign, runner_settings, submit
from tests.integration.harness import services, wait_for


async def test_the_result_is_marked_pending_before_the_failure_is_recorded_as_reported(
        nats_url: str, tmp_path: Path, kubesim_factory: Any) -> None:
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {"forbid": ["delete persistentvolumeclaims"]}},
                          kubelet="none")
    measured = tmp_path / "spool" / "measured"
    bus = await Bus.connect(nats_url, "test")
    nc = await nats.connect(nats_url)
    seen: list[str] = []  # the subjects of the run's failure and log, in order

    async def record(msg: Any) -> None:
        seen.append(msg.subject)

    marks_when_reported: list[list[str]] = []  # at each report recorded: the pending marks in the folder

    async def on_reported(run: events.RunSpec) -> None:
        marks_when_reported.append(sorted(p.name for p in measured.iterdir() if p.name.endswith(SUFFIX)))

    executor = None
    try:
        await bus.ensure_streams()
        for subject in (subjects.RUN_FAILED, subjects.RUN_LOG):
            await nc.subscribe(f"{subject}.>", cb=record)
        settings = config.load(config.RunnerSettings, nats_url=nats_url, runner_kubeconfig=sim.kubeconfig,
                               runner_spool_dir=str(tmp_path / "spool"))
        executor = ControlPlaneExecutor(settings, bus)
        executor.on_reported = on_reported
        executor.launch(spec("volume-churn", count=20, concurrency=4, timeout=60))
        await wait_for(lambda: len(marks_when_reported) == 2, 90, "the failure and the result reported")
        await wait_for(lambda: len(seen) == 2, 30, "the failure and the result on the bus")
        await wait_for(lambda: not any(p.name.endswith(SUFFIX) for p in measured.iterdir()), 30, "the mark gone")
    finally:
        if executor is not None:
            await executor.close()
        await nc.close()
        await bus.close()
    kept = [p.name for p in measured.iterdir()]
    assert len(kept) == 1 and kept[0].endswith(".jsonl"), kept
    assert seen[0].startswith(f"{subjects.RUN_FAILED}.") and seen[1].startswith(f"{subjects.RUN_LOG}."), seen
    # the failure recorded with the result's mark already there; the result recorded before its mark goes
    assert marks_when_reported == [[kept[0] + SUFFIX], [kept[0] + SUFFIX]], marks_when_reported
    assert json.loads((measured / kept[0]).read_text().splitlines()[0])["aborted"]["deletes_refused"] is True


async def forget_kept_copies(nats_url: str) -> None:
    """Remove the reports the runner kept in its bucket (outbox.KEPT): NATS refusing the failure for its size (10054)
    is a refusal whose report is kept there since session 55; an earlier runner kept none."""
    bus = await Bus.connect(nats_url, "test-admin")
    try:
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        kept = await Bus.kv_keys(kv, f"{outbox.KEPT}.")
        assert len(kept) == 1, kept
        for key in kept:
            await kv.delete(key)
    finally:
        await bus.close()


@pytest.mark.parametrize("earlier_mark", [False, True], ids=["mark-with-failure", "earlier-versions-mark"])
async def test_a_mark_whose_failure_was_not_recorded_sends_that_failure_then_the_result(
        earlier_mark: bool, nats_url: str, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Marked first, a result's mark can be left by a runner stopped before the run's failure was recorded (here
    NATS did not take the failure: the events stream's max_msg_size below it). The mark holds the failure (its fixed
    event id): the next runner sends it, then the result, and does not run the run again. Before, the mark was removed
    and the run run again: its claims left by the first attempt, it failed 409 Conflict, the figures lost. A mark of
    an earlier version (no failure in it) is still removed, not sent, and the run runs again."""
    caplog.set_level(logging.INFO, logger="podtax.runner")
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {"forbid": ["delete persistentvolumeclaims"]}},
                          kubelet="none")
    spool = tmp_path / "spool"
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        await s.start("runner", serve, runner_settings(s, sim, spool))
        await set_max_msg_size(nats_url, 1500)  # NATS does not take the failure (~3 KB): held until the runner stops
        await submit(tmp_path, campaign("cp-late", 20))
        await wait_for(lambda: "NATS refuses its failure" in caplog.text, 90, "the failure not taken")
        await s.crash(next(t for t in s.tasks if t.get_name() == "runner"))
        mark, = (p for p in (spool / "measured").iterdir() if p.name.endswith(SUFFIX))
        doc = json.loads(mark.read_text())
        assert json.loads(doc["failure"])["id"] == events.RunSpec.model_validate(doc["run"]).event_id("failure")
        await forget_kept_copies(nats_url)  # the mark is the only copy (NATS away at the stop: the bucket is on it)
        if earlier_mark:  # an earlier version's runner: no failure in the mark
            mark.write_text(json.dumps({k: v for k, v in doc.items() if k != "failure"}))
        await set_max_msg_size(nats_url, -1)
        caplog.clear()
        await s.start("runner", serve, runner_settings(s, sim, spool))
        await wait_for(lambda: "campaign cp-late finished" in caplog.text, 90, "the campaign finished")
        want = ["failed"] if earlier_mark else ["ok"]
        await wait_for(lambda: [r[0] for r in s.query(QUERY)] == want, 30, f"the run {want[0]} in the analyzer")
        (_, flags), = s.query(QUERY)
        await wait_for(lambda: not mark.exists(), 30, "the mark gone")
    said = caplog.text
    removed = f"the pending DELETE_REFUSED result {mark} is of a run whose failure was not recorded as reported: " \
        "removed, not sent (the run runs again)"
    if earlier_mark:  # run again (its claims left by the first attempt: it fails, refused creates, no result)
        assert removed in said and "go as a result flagged DELETE_REFUSED" not in said, said
        assert "409 Conflict" in said and flags == [], flags
        return
    assert removed not in said and "409 Conflict" not in said, said  # not run again
    assert said.index("its failure, kept by an earlier runner, was sent again") < said.index(
        "go as a result flagged DELETE_REFUSED"), said
    assert any(f.startswith("DELETE_REFUSED: ") for f in flags), flags


@pytest.mark.parametrize("with_spool", [False, True])
async def test_a_runner_without_a_spool_folder_says_once_at_start_what_a_restart_loses(
        with_spool: bool, nats_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Without PODTAX_RUNNER_SPOOL_DIR, a DELETE_REFUSED result (and a report NATS and the bucket both refuse) lives in
    memory only until NATS takes it: one warning at start says so and names the fix. Before, nothing did."""
    caplog.set_level(logging.INFO, logger="podtax.runner")
    kw = {"runner_spool_dir": str(tmp_path / "spool")} if with_spool else {}
    async with services(nats_url, tmp_path) as s:
        await s.start("runner", serve, s.settings(config.RunnerSettings, runner_kubernetes=False, **kw))
        await wait_for(lambda: "resumed 0 campaigns" in caplog.text, 30, "the runner started")
    said = [r for r in caplog.records if r.getMessage().startswith("PODTAX_RUNNER_SPOOL_DIR is unset")]
    assert len(said) == (0 if with_spool else 1), [r.getMessage() for r in said]
    if said:
        message = said[0].getMessage()
        assert said[0].levelno == logging.WARNING and "DELETE_REFUSED" in message, message
        assert "a restart before then loses them" in message and "set it to a folder" in message, message
