"""A log the host agent measured while NATS was down is kept on disk and published later, not measured
again. Real nats-server (stopped during the run and restarted on its port and store), real sysbench.

Before (stop 31's audit): the publish failed, the request was redelivered, and the benchmark ran a
second time; the first measurement was lost, and a long fio run cost its whole duration again."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
from podtax import config, events, natsserver, subjects
from podtax.bus import Bus, BusError
from podtax_host_agent import guard, measured, outbox, service
from podtax_host_agent.service import Agent

from tests.integration.test_agent_cancel import _blind_agent

NODE = "n1"


@pytest.fixture
def servers(tmp_path: Path):
    started = [natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")]
    yield started
    for s in started:
        s.stop()


async def _connected(bus: Bus) -> None:
    for _ in range(200):  # nats-py reconnects by itself
        if bus.nc.is_connected:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the bus did not reconnect")


@contextlib.asynccontextmanager
async def _watched(nats_url: str) -> AsyncIterator[tuple[Bus, nats.NATS, list[dict[str, Any]]]]:
    """A bus with its streams, a second connection and the run logs it sees published (flush it before reading)."""
    bus = await Bus.connect(nats_url, "test/agent")
    nc = await nats.connect(nats_url)
    logs: list[dict[str, Any]] = []

    async def on_log(msg: Any) -> None:
        logs.append(json.loads(msg.data))

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
    try:
        await bus.ensure_streams()
        yield bus, nc, logs
    finally:
        await nc.close()
        await bus.close()


async def test_a_log_measured_while_nats_was_down_is_published_later_not_measured_again(
        servers: list[natsserver.NatsServer], tmp_path: Path) -> None:
    server = servers[0]
    bus = await Bus.connect(server.url, "test/agent")
    try:
        await bus.ensure_streams()
        settings = config.load(config.HostAgentSettings, nats_url=server.url, agent_node=NODE,
                               agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
        run = events.RunSpec(run_id="kept-1", campaign="c", node=NODE, env="host", test="sysbench-cpu",
                             params={"max_prime": 2000, "events": 50, "threads": 1}, timeout_s=30)
        request = events.run_requested(run, "test")
        agent = Agent(settings, bus)
        await agent.refresh_facts()
        server.stop()  # NATS goes away; the benchmark itself needs no NATS
        with pytest.raises(Exception):  # noqa: B017,PT011 - whatever nats-py raises: the request is redelivered
            await agent.handle(request)
        kept = outbox.load(tmp_path / "state", "kept-1", 512_000)
        assert kept is not None, "the measured log was not kept"
        assert "events per second" in kept.data.stdout

        servers.append(natsserver.start(server.store_dir, port=server.port))
        await _connected(bus)
        nc = await nats.connect(server.url)
        logs: list[dict[str, Any]] = []

        async def on_log(msg: Any) -> None:
            logs.append(json.loads(msg.data))

        sub = await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
        try:
            again = Agent(settings, bus)  # a restarted agent gets the redelivered request
            await again.refresh_facts()
            await again.handle(request)
            await nc.flush()
        finally:
            await sub.unsubscribe()
            await nc.close()
        assert [e["data"]["run"]["run_id"] for e in logs] == ["kept-1"]
        published = events.decode(json.dumps(logs[0]))
        assert published.data.started_at == kept.data.started_at, "the benchmark ran again instead"
        assert outbox.kept(tmp_path / "state") == [], "the published log is still kept"
        assert request.data.run.event_id("log") in again.done  # the run and its submission (measured.key)
    finally:
        await bus.close()


async def test_a_starting_agent_publishes_what_an_earlier_one_kept(nats_url: str, tmp_path: Path) -> None:
    bus = await Bus.connect(nats_url, "test/agent")
    nc = await nats.connect(nats_url)
    logs: list[str] = []

    async def on_log(msg: Any) -> None:
        logs.append(json.loads(msg.data)["id"])

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
    try:
        await bus.ensure_streams()
        state = tmp_path / "state"
        run = events.RunSpec(run_id="left-1", campaign="c", node=NODE, env="host", test="sysbench-cpu",
                             params={"events": 10}, timeout_s=30)
        raw = events.RawLog(run=run, stdout="x", stderr="", exit_code=0, started_at=events.now(),
                            ended_at=events.now(), tool_version="1.0.20")
        outbox.save(state, events.raw_log(raw, "test").model_copy(update={"id": "left-1.log"}))
        (state / outbox.FOLDER / "torn.json").write_text('{"type": "podtax.run.log.v1", "data": {')
        settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE,
                               agent_workdir=tmp_path / "work", agent_state_dir=state)
        agent = Agent(settings, bus)
        await agent.learn_stream()  # kept since this NATS's stream was made: its own
        await agent.flush_outbox()
        await nc.flush()
        assert logs == ["left-1.log"]
        assert outbox.kept(state) == []
        assert (state / outbox.FOLDER / "torn.json.bad").exists(), "a torn file is set aside, not trusted or lost"
    finally:
        await nc.close()
        await bus.close()


async def test_a_log_kept_under_an_earlier_nats_is_set_aside_not_published_as_the_new_runs(
        nats_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Logs kept while NATS was down (the usual prelude to a reset), then a new NATS: a new campaign of the same name
    has the same run ids. Before, the starting agent published the earlier NATS's log as the new campaign's run, noted
    it reported, and the new request was skipped ('run and reported already'): never measured. Now a log kept under
    another events stream (named in the file, or, an older agent's, kept before this stream was made) is set aside
    (renamed, one warning line naming it), and the new request is measured."""
    state = tmp_path / "state"
    old_run = events.RunSpec(run_id="d-1", campaign="d", node=NODE, env="host", test="sysbench-cpu",
                             params={"max_prime": 2000, "events": 50, "threads": 1}, timeout_s=30)
    at = dt.datetime(2001, 9, 9, tzinfo=dt.UTC)
    for run_id, stream in (("d-1", ""), ("e-1", at.isoformat())):  # an older agent's file; one naming its stream
        raw = events.RawLog(run=old_run.model_copy(update={"run_id": run_id}), stdout="OLD-NATS", exit_code=0,
                            started_at=at, ended_at=at)
        outbox.save(state, events.raw_log(raw, "test").model_copy(update={"id": f"{run_id}.log"}), stream)
    os.utime(state / outbox.FOLDER / "d-1.json", (1e9, 1e9))  # kept in 2001, long before this NATS
    async with _watched(nats_url) as (bus, nc, logs):
        settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE,
                               agent_workdir=tmp_path / "work", agent_state_dir=state)
        agent = Agent(settings, bus)
        await agent.learn_stream()
        await agent.refresh_facts()
        await agent.flush_outbox()
        await agent.handle(events.run_requested(old_run, "podtax/runner"))  # the new campaign d's request
        await nc.flush()
        assert [(e["data"]["run"]["run_id"], e["data"]["stdout"] == "OLD-NATS") for e in logs] == [("d-1", False)]
        assert "events per second" in logs[0]["data"]["stdout"], "measured"
        assert outbox.kept(state) == []
        aside = sorted(p.name for p in (state / outbox.FOLDER).iterdir())
        assert aside == ["d-1.json.earlier-nats", "e-1.json.earlier-nats"], "set aside, not lost"
        warned = [r.message for r in caplog.records if "under another NATS" in r.message]
        assert len(warned) == 2 and all("earlier-nats" in w for w in warned), warned
        again = Agent(settings, bus)  # a restart leaves them aside
        await again.learn_stream()
        assert sorted(p.name for p in (state / outbox.FOLDER).iterdir()) == aside

def _run(run_id: str) -> events.RunSpec:
    return events.RunSpec(run_id=run_id, campaign="d", node=NODE, env="host", test="sysbench-cpu",
                          params={"max_prime": 2000, "events": 50, "threads": 1}, timeout_s=30)


def _old_log(state: Path, run_id: str, stream: str) -> events.RunSpec:
    """Keep a log of `run_id` (campaign d, stdout OLD-NATS) measured under `stream`; returns its run."""
    run = _run(run_id)
    at = dt.datetime(2001, 9, 9, tzinfo=dt.UTC)
    raw = events.RawLog(run=run, stdout="OLD-NATS", exit_code=0, started_at=at, ended_at=at)
    outbox.save(state, events.raw_log(raw, "test").model_copy(update={"id": f"{run_id}.log"}), stream)
    return run


async def _no_answer(*_: object, **__: object) -> None:
    raise TimeoutError


@pytest.mark.parametrize("answers_later", [True, False])
async def test_with_the_stream_unknown_at_start_an_earlier_nats_log_is_not_published_as_the_new_run(
        nats_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, answers_later: bool) -> None:
    """The stream unknown at start (one slow answer), the new campaign d's request for d-1 comes, its log kept under
    the 2001 NATS. Before (review hR4 B1), it asked again at most once a minute and load() ignored the file's stream:
    the 2001 log was published as this NATS's d-1 and the new run never measured. Now it asks at once: NATS answering,
    the log is set aside as .earlier-nats; still not answering, as .unknown-nats (one warning); d-1 is measured."""
    state = tmp_path / "state"
    run = _old_log(state, "d-1", dt.datetime(2001, 9, 9, tzinfo=dt.UTC).isoformat())
    async with _watched(nats_url) as (bus, nc, logs):
        agent = await _blind_agent(nats_url, bus, tmp_path)
        await agent.refresh_facts()
        await agent.flush_outbox()  # waits for the stream
        if not answers_later:
            bus.js.stream_info = _no_answer  # type: ignore[method-assign]
        await agent.handle(events.run_requested(run, "podtax/runner"))
        await nc.flush()
        assert [e["data"]["stdout"] == "OLD-NATS" for e in logs] == [False], "the 2001 log published as d-1"
        assert "events per second" in logs[0]["data"]["stdout"], "measured"
        aside = "d-1.json" + (outbox.ASIDE if answers_later else outbox.UNVERIFIED)
        assert [p.name for p in (state / outbox.FOLDER).iterdir()] == [aside], "set aside, not lost"
        warned = [r.message for r in caplog.records if "set aside" in r.message]
        assert len(warned) == 1 and aside in warned[0], warned


async def test_with_the_stream_unknown_at_start_a_run_noted_in_an_earlier_nats_is_run(nats_url: str,
                                                                                     tmp_path: Path) -> None:
    """<state>/reported names d-1 of the 2001 NATS, the stream unknown at start. Before (review hR4 B2), d-1 stayed
    'reported already' and the new campaign d's d-1 was acked with nothing published (never measured); its request now
    asks for the stream, which forgets the note of another NATS, and d-1 is measured."""
    guard.reported(tmp_path / "state", "d-1", dt.datetime(2001, 9, 9, tzinfo=dt.UTC).isoformat())
    async with _watched(nats_url) as (bus, nc, logs):
        agent = await _blind_agent(nats_url, bus, tmp_path)
        assert "d-1" in agent.done
        await agent.refresh_facts()
        await agent.handle(events.run_requested(_run("d-1"), "podtax/runner"))
        await nc.flush()
        assert [e["data"]["run"]["run_id"] for e in logs] == ["d-1"], "acked as reported already, never measured"
        assert agent.stream and guard.last_reported(tmp_path / "state") == measured.key(_run("d-1"))


@pytest.mark.parametrize("asked_by", ["cancellation", "request"])
async def test_a_log_kept_under_this_nats_is_published_once_the_stream_unknown_at_start_is_known(
        nats_url: str, tmp_path: Path, asked_by: str) -> None:
    """A log kept under THIS NATS (its request past max_deliver), the stream unknown at start: the start-up flush
    leaves it (as designed). Before (review hR4 B3), learning the stream later (a cancellation asks again) published
    nothing while the agent lived; now the logs that waited are published then. Before review hR6 L1, only a
    cancellation asked: run requests flowing (NATS answering again), the kept log stayed unpublished; a request asks
    too now."""
    state = tmp_path / "state"
    async with _watched(nats_url) as (bus, nc, logs):
        stream = (await bus.js.stream_info(subjects.STREAM)).created.isoformat()
        _old_log(state, "k-1", stream)
        agent = await _blind_agent(nats_url, bus, tmp_path)
        await agent.refresh_facts()
        await agent.flush_outbox()
        await nc.flush()
        assert logs == [] and outbox.kept(state) == ["k-1"], "published with the stream unknown"
        agent.stream_asked -= service.STREAM_ASK_S  # long after the start
        if asked_by == "cancellation":
            await agent.on_cancel(events.campaign_cancelled(events.CampaignCancelled(campaign="x")))
        else:
            await agent.handle(events.run_requested(_run("k-2"), "podtax/runner"))
        await nc.flush()
        assert agent.stream == stream
        assert sorted(e["id"] for e in logs) == ["k-1.log"] + (["k-2.log"] if asked_by == "request" else [])
        assert outbox.kept(state) == [], "kept log still unpublished"


async def test_kept_logs_are_not_published_from_a_state_dir_become_unsafe(nats_url: str, tmp_path: Path) -> None:
    """A log kept under this NATS waits for the stream (unknown at start). Meanwhile the state directory becomes
    writable by others and its kept log is replaced. Before (review hR6 M1), when the stream became known,
    flush_outbox loaded it without checking the directory and report() published it anyway: a root agent published
    another user's file as its measurement. Now flush_outbox and set_aside touch nothing there (one error line)."""
    state = tmp_path / "state"
    async with _watched(nats_url) as (bus, nc, logs):
        stream = (await bus.js.stream_info(subjects.STREAM)).created.isoformat()
        run = _old_log(state, "k-1", stream)
        agent = await _blind_agent(nats_url, bus, tmp_path)
        await agent.flush_outbox()
        os.chmod(state, 0o777)  # another user may write there now
        at = dt.datetime(2001, 9, 9, tzinfo=dt.UTC)
        forged = events.RawLog(run=run, stdout="FORGED", exit_code=0, started_at=at, ended_at=at)
        outbox.save(state, events.raw_log(forged, "x").model_copy(update={"id": "k-1.log"}), stream)
        agent.stream_asked -= service.STREAM_ASK_S
        await agent.on_cancel(events.campaign_cancelled(events.CampaignCancelled(campaign="x")))
        await nc.flush()
        assert [e["data"]["stdout"] for e in logs] == [], "a log from an unsafe state directory published"


def test_a_fifo_in_the_outbox_does_not_hang_set_aside(tmp_path: Path) -> None:
    """Before (review hR6 M2), outbox.set_aside and load read kept files with read_bytes(): a FIFO (or a link to one,
    to /dev/zero) blocked or read without bound (root). They are now read as the notes are (guard.read_regular)."""
    folder = tmp_path / outbox.FOLDER
    folder.mkdir(parents=True)
    os.mkfifo(folder / "f-1.json")
    t = threading.Thread(target=outbox.set_aside, args=(tmp_path, "2001-09-09T00:00:00+00:00", 1e9, 512_000),
                         daemon=True)
    t.start()
    t.join(2)
    blocked = t.is_alive()
    if blocked:  # free the blocked reader
        os.close(os.open(folder / "f-1.json", os.O_WRONLY | os.O_NONBLOCK))
    assert not blocked, "set_aside blocked on a FIFO in the outbox"
    assert outbox.load(tmp_path, "f-1", 512_000) is None


def test_a_dangling_link_in_the_outbox_does_not_stop_the_agent(tmp_path: Path) -> None:
    """Before (review hR6 M2), kept() called p.stat() on each file: a dangling link raised FileNotFoundError at every
    start (a crash loop). A link is no kept log now."""
    folder = tmp_path / outbox.FOLDER
    folder.mkdir(parents=True)
    (folder / "g-1.json").symlink_to(tmp_path / "nowhere")
    (folder / "h-1.json").symlink_to(folder / "g-1.json")
    assert outbox.kept(tmp_path) == []
    assert outbox.load(tmp_path, "h-1", 512_000) is None


async def test_a_run_in_flight_across_a_nats_reset_is_not_published_as_the_new_nats_run(
        nats_url: str, tmp_path: Path) -> None:
    """The agent learnt the events stream of NATS 1 (2001); NATS is reset while run d-1 lasts (the agent notices only
    at its next fetch). Before (review hR6 H1), its log, measured for NATS 1's campaign d, was published into NATS 2 as
    d-1 (the analyzer keeps the first result of a run id). Now the stream is asked before the publish: the log is kept
    under NATS 1 (set aside at the restart) and the agent stops (BusError); nothing noted reported."""
    state, nats1 = tmp_path / "state", dt.datetime(2001, 9, 9, tzinfo=dt.UTC).isoformat()
    async with _watched(nats_url) as (bus, nc, logs):
        agent = await _blind_agent(nats_url, bus, tmp_path)
        agent.stream = nats1  # NATS 1, learnt at start
        await agent.refresh_facts()
        with pytest.raises(BusError, match="the events stream changed while run d-1 ran"):
            await agent.handle(events.run_requested(_run("d-1"), "podtax/runner"))  # ends after the reset
        await nc.flush()
        assert logs == [], "NATS 1's measurement of d-1 published into NATS 2"
        assert (state / outbox.FOLDER / "d-1.json").read_text().startswith(nats1 + "\n"), "kept under NATS 1"
        assert guard.last_reported(state) is None
        restarted = await _blind_agent(nats_url, bus, tmp_path)
        await restarted.learn_stream()
        assert outbox.kept(state) == [] and (state / outbox.FOLDER / f"d-1.json{outbox.ASIDE}").exists()


async def test_the_noted_run_with_nats_not_answering_is_not_acked_unmeasured(nats_url: str, tmp_path: Path,
                                                                             caplog: pytest.LogCaptureFixture) -> None:
    """<state>/reported names d-1 of the 2001 NATS; stream_info never answers. Before (review hR6 M3), the redelivered
    d-1 of the new campaign d was acked as 'reported already' with nothing published (a kept log in the same situation
    is set aside and the run measured again). Now it is measured again, one warning. Its log and note name the run's
    start: before (review hR6 H1), with the stream unknown, they named their own time ('@' and now), so written after
    a NATS reset during the run they read as the new NATS's."""
    guard.reported(tmp_path / "state", "d-1", dt.datetime(2001, 9, 9, tzinfo=dt.UTC).isoformat())
    async with _watched(nats_url) as (bus, nc, logs):
        agent = await _blind_agent(nats_url, bus, tmp_path)
        await agent.refresh_facts()
        bus.js.stream_info = _no_answer  # type: ignore[method-assign]
        await agent.handle(events.run_requested(_run("d-1"), "podtax/runner"))
        await nc.flush()
        assert [e["data"]["run"]["run_id"] for e in logs] == ["d-1"], "acked with nothing measured or published"
        assert len([r for r in caplog.records if "measured again" in r.message]) == 1
        started = dt.datetime.fromisoformat(logs[0]["data"]["started_at"]).timestamp()
        assert guard.last_reported_note(tmp_path / "state") == (measured.key(_run("d-1")), f"@{started:.6f}")


async def test_requests_with_the_stream_unknown_ask_for_it_once_a_minute(nats_url: str, tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """NATS hangs on stream info (a JetStream meta-leader away, consumers still delivering). Before (review hR8),
    every run request asked while the stream was unknown, each waiting 10 s with a warning, even two acked at once as
    reported already (20 s). Now a request asks at most every STREAM_ASK_S (at once only for the noted run or a kept
    log, both judged by the stream), waiting REQUEST_ASK_S at most: one ask, one warning for the two."""
    asked: list[float] = []

    async def hangs(*_: object, **__: object) -> None:
        asked.append(0)
        await asyncio.sleep(3600)

    async with _watched(nats_url) as (bus, nc, logs):
        agent = await _blind_agent(nats_url, bus, tmp_path)
        bus.js.stream_info = hangs  # type: ignore[method-assign]
        agent.stream_asked -= service.STREAM_ASK_S  # long after the start
        caplog.clear()  # the start's warning
        for run_id in ("d-1", "d-2"):  # 'run and reported already': acked without running anything
            agent.remember(_run(run_id))
            await agent.handle(events.run_requested(_run(run_id), "podtax/runner"))
        assert len(asked) == 1, f"stream info asked {len(asked)} times for two requests"
        assert len([r for r in caplog.records if "creation time is unknown" in r.message]) == 1


async def test_a_run_taken_for_remade_with_the_stream_unknown_says_it_is_measured_again(
        nats_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The stream unknown, its creation time (the server's clock) after the run's start (the host's): a NATS reset, or
    this host's clock behind. Its log is kept, not published. Before (review hR8), the line said 'stopping' though the
    agent goes on (its consumer lives, the request comes again and is measured again); now it says so."""
    async with _watched(nats_url) as (bus, nc, logs):
        agent = await _blind_agent(nats_url, bus, tmp_path)
        await agent.refresh_facts()
        later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)

        async def made_later(*_: object, **__: object) -> dt.datetime:
            if agent.current is None:  # asked before the run: no answer, the stream stays unknown
                raise TimeoutError
            return later

        agent.stream_created = made_later  # type: ignore[method-assign]
        with pytest.raises(BusError, match="the events stream changed while run d-1 ran"):
            await agent.handle(events.run_requested(_run("d-1"), "podtax/runner"))
        await nc.flush()
        assert logs == [] and outbox.kept(tmp_path / "state") == ["d-1"]
        said = [r.getMessage() for r in caplog.records if "changed while it ran" in r.getMessage()]
        assert len(said) == 1 and "measured again" in said[0] and "stopping" not in said[0], said


def test_a_second_undecodable_kept_file_does_not_overwrite_the_first(tmp_path: Path) -> None:
    """Before (review hR6 L2), load renamed a file that does not decode to <run id>.bad, over the one set aside
    before; both are kept now (<run id>.json.bad, .bad-1)."""
    folder = tmp_path / outbox.FOLDER
    folder.mkdir(parents=True)
    for text in ("first", "second"):
        (folder / "b-1.json").write_text(text)
        assert outbox.load(tmp_path, "b-1", 512_000) is None
    assert sorted(p.read_text() for p in folder.iterdir()) == ["first", "second"]
