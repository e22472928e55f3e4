"""The reports a runner keeps in its bucket while NATS refuses them (outbox.KEPT), review r1 of a1f16ee: a copy must
not stay for ever, nor be taken for another submission's, nor go before its run is recorded as reported, and a pod
log sent from a copy records its image's tool version as at its first send. Real nats-server."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from kubernetes import client
from nats.js.kv import KeyValue
from podtax import config, events, natsserver, subjects
from podtax.bus import Bus
from podtax_runner import outbox
from podtax_runner.kube import KubeExecutor
from podtax_runner.service import Runner

from tests.integration.test_runner_no_expiry_without_room import spec
from tests.integration.test_runner_own_events_refused import runner_of
from tests.integration.test_runner_stream_full_held import fill, wait_for_async

log = logging.getLogger("test")


def a_log(run: events.RunSpec) -> events.RawLogV1:
    now = events.now()
    raw = events.RawLog(run=run, stdout="x", exit_code=0, started_at=now, ended_at=now, tool_version="1.0.20",
                        provenance=events.Provenance(image="bench:1"))
    return events.raw_log(raw, "test").model_copy(update={"id": f"{run.run_id}.log"})


async def keys(kv: KeyValue) -> list[str]:
    return sorted(await Bus.kv_keys(kv, f"{outbox.KEPT}."))


async def two_runs(bus: Bus, first: str, second: str) -> tuple[Runner, Any, Any]:
    """A runner with campaigns `first` and `second` (a run each dispatched), the first's run recorded as reported."""
    runner = await runner_of(bus, spec(first, "n1"), spec(second, "n2"))
    await runner.tick()
    a, b = (next(s for s in runner.campaigns[c].runs.values() if s.status == "dispatched") for c in (first, second))
    assert runner.campaigns[first].reported(a.run.run_id, events.now())
    await runner.save(runner.campaigns[first])
    return runner, a, b


async def resumed(runner: Runner, bus: Bus) -> tuple[list[str], list[str]]:
    """(the run ids whose kept copy a runner resuming after `runner` sent, the kept keys left after it loaded)."""
    sent: list[str] = []
    again = Runner(runner.settings, bus, runner.kv, None)
    again.controlplane.resend = lambda run, event: sent.append(run.run_id)  # type: ignore[method-assign]
    await again.load()
    return sent, await keys(runner.kv)


async def test_a_resuming_runner_removes_every_copy_it_does_not_send(nats_server: natsserver.NatsServer) -> None:
    bus = await Bus.connect(nats_server.url, "test")
    try:
        runner, a, b = await two_runs(bus, "ka", "kb")
        made_a, made_b = (runner.campaigns[c].created_at.isoformat() for c in ("ka", "kb"))
        kv = runner.kv
        await kv.put(outbox.kept_key(a.run), outbox.kept_value(a_log(a.run), made_a))  # its run recorded reported
        other = a.run.model_copy(update={"campaign": "gone", "run_id": "gone-0123456789abcdef"})
        await kv.put(outbox.kept_key(other), outbox.kept_value(a_log(other), made_a))  # a campaign not there
        await kv.put(f"{outbox.KEPT}.kb.kb-0123456789abcdef", b"not json")  # does not decode
        await kv.put(outbox.kept_key(b.run), outbox.kept_value(a_log(b.run), "2020-01-01T00:00:00+00:00"))
        assert len(await keys(kv)) == 4
        sent, left = await resumed(runner, bus)
    finally:
        await bus.close()
    assert made_b != "2020-01-01T00:00:00+00:00"
    assert left == [], left  # before: the unknown campaign's copy and the one that did not decode stayed
    assert sent == [], sent  # the copy of another submission of kb is not its run's report


async def test_a_bare_event_kept_by_the_runner_before_is_sent(nats_server: natsserver.NatsServer) -> None:
    """The runner before kept a refused report as its bare event (no submission): such a copy of a run in flight and
    not reported is sent, not removed as undecodable with its run run again; one of a reported run is removed
    (review r6, L3)."""
    bus = await Bus.connect(nats_server.url, "test")
    try:
        runner, a, b = await two_runs(bus, "la", "lb")
        await runner.kv.put(outbox.kept_key(a.run), events.encode(a_log(a.run)))  # its run recorded reported
        await runner.kv.put(outbox.kept_key(b.run), events.encode(a_log(b.run)))  # in flight: its report
        sent, left = await resumed(runner, bus)
    finally:
        await bus.close()
    assert sent == [b.run.run_id], sent
    assert left == [outbox.kept_key(b.run)], left  # sent; it goes once its run is recorded as reported


async def test_a_copy_goes_only_once_its_run_is_recorded_as_reported(nats_server: natsserver.NatsServer) -> None:
    """NATS takes a report sent from a kept copy: the copy stays until the runner has recorded the run as reported
    (before, send() removed it first: a crash in between ran the run again), and stays when that record failed."""
    bus = await Bus.connect(nats_server.url, "test")
    try:
        await bus.ensure_streams(max_bytes=1_000_000)
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        run = events.RunSpec(run_id="kc-0123456789abcdef", campaign="kc", node="n1", env="kubernetes",
                             test="sysbench-cpu", params={})
        box = outbox.Outbox(bus, log, "pod run", "runs again")
        await kv.put(outbox.kept_key(run), outbox.kept_value(a_log(run), ""))
        assert await box.resend(run, a_log(run))
        still = await keys(kv)
        await box.release(run, recorded=False)  # the record failed: the next runner sorts it out
        after_failed = await keys(kv)
        assert await box.resend(run, a_log(run))
        await box.release(run, recorded=True)
        gone = await keys(kv)
    finally:
        await bus.close()
    assert still == [outbox.kept_key(run)] and after_failed == still, (still, after_failed)
    assert gone == [], gone


async def test_a_keep_whose_answer_was_lost_is_removed_all_the_same(nats_server: natsserver.NatsServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy's write landed but its answer did not come in time: the keep counted as not made, and the copy was
    never removed once NATS took the report (review r1 of a1f16ee, M2)."""
    bus = await Bus.connect(nats_server.url, "test")
    real_put = KeyValue.put

    async def landed_unanswered(self: KeyValue, key: str, value: bytes, **kwargs: Any) -> int:
        revision = await real_put(self, key, value, **kwargs)
        if key.startswith(f"{outbox.KEPT}."):
            raise TimeoutError("the answer was lost")
        return revision

    try:
        await bus.ensure_streams(max_bytes=100_000)
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        monkeypatch.setattr(KeyValue, "put", landed_unanswered)
        run = events.RunSpec(run_id="kd-0123456789abcdef", campaign="kd", node="n1", env="kubernetes",
                             test="sysbench-cpu", params={})
        box = outbox.Outbox(bus, log, "pod run", "runs again")
        assert await fill(bus) > 0
        sending = asyncio.create_task(box.send(run, a_log(run), "log"))
        await wait_for_async(lambda: asyncio.sleep(0, bool(box.holding().get(run.run_id))), 30, "the refusal")
        kept = await keys(kv)
        info = await bus.js.stream_info(subjects.STREAM)  # an admin makes room
        info.config.max_bytes = 10_000_000
        await bus.js.update_stream(info.config)
        assert await asyncio.wait_for(sending, 60)
        await box.release(run, recorded=True)
        left = await keys(kv)
    finally:
        await bus.close()
    assert kept == [outbox.kept_key(run)], kept
    assert left == [], left


async def test_a_pod_log_sent_from_a_copy_records_its_images_tool_version(nats_server: natsserver.NatsServer) -> None:
    bus = await Bus.connect(nats_server.url, "test")
    seen: list[tuple[str, dict[str, str]]] = []
    try:
        await bus.ensure_streams(max_bytes=1_000_000)
        executor = KubeExecutor(config.load(config.RunnerSettings, nats_url=nats_server.url), bus, client.ApiClient())

        async def versions(image: str, tools: dict[str, str]) -> None:
            seen.append((image, tools))

        executor.on_image_versions = versions
        run = events.RunSpec(run_id="ke-0123456789abcdef", campaign="ke", node="n1", env="kubernetes",
                             test="sysbench-cpu", params={})
        executor.resend(run, a_log(run))
        await asyncio.gather(*executor.tasks.values())
    finally:
        await bus.close()
    assert seen == [("bench:1", {"sysbench": "1.0.20"})], seen  # before: none (the version not recorded)
