"""`podtax campaign cancel` stops a host run in flight: the agent kills its process group and reports it failed with
reason cancelled (no log), and starts no run of that campaign afterwards. Real nats-server with the permissions
`podtax up` generates (each side logged in as its role), the real agent (serve) and a real stress-ng run of an hour."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from podtax import busconsume, config, events, localauth, natsauth, natsfetch, natsserver, subjects
from podtax.bus import Bus, ConsumerSpec
from podtax_host_agent import guard, measured, service

from tests.integration.harness import wait_for
from tests.integration.secured import buses_fixture, connect, secured_fixture  # noqa: F401 - fixtures

NODE = "n1"
HOUR = 3600


def _run(run_id: str, campaign: str = "c") -> events.RunSpec:
    return events.RunSpec(run_id=run_id, campaign=campaign, node=NODE, env="host", test="stress-ng-cpu",
                          params={"threads": 1, "method": "matrixprod", "timeout": HOUR}, timeout_s=HOUR)


async def _outcomes(watch, want: int, within_s: float) -> list[dict]:  # type: ignore[no-untyped-def]
    """Run logs and failures published, until `want` came or `within_s` passed."""
    got: list[dict] = []
    deadline = asyncio.get_running_loop().time() + within_s
    while len(got) < want and asyncio.get_running_loop().time() < deadline:
        try:
            msgs = await watch.fetch(1, timeout=1)
        except TimeoutError:
            continue
        for msg in msgs:
            await msg.ack()
            got.append(json.loads(msg.data))
    return got


async def _started(state: Path) -> dict:
    for _ in range(600):
        if (state / guard.RECORD).exists():
            return json.loads((state / guard.RECORD).read_text())
        await asyncio.sleep(0.1)
    raise AssertionError("the run never started")


async def _serving(runner: Bus, agent_bus: Bus, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A consumer of the runs' logs and failures; the event that stops the real agent, serving as host_agent."""
    settings = config.load(config.HostAgentSettings, nats_url="nats://127.0.0.1:1", agent_node=NODE,
                           agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
    watch = await runner._subscribe(ConsumerSpec("watch", [f"{subjects.RUN_LOG}.>", f"{subjects.RUN_FAILED}.>"]))
    stop = asyncio.Event()
    return watch, stop, asyncio.create_task(service.serve(settings, agent_bus, stop))


@contextlib.asynccontextmanager
async def _own_nats(tmp_path: Path, store: str = "js", auth: tuple[dict[str, str], Path] | None = None):  # type: ignore[no-untyped-def]
    """A real nats-server with the permissions natsauth gives now (a test may have changed them; `auth`: the users of
    an earlier one), JetStream in tmp_path/`store`, a connection as runner, cli and host_agent, the streams made."""
    users, conf = auth or localauth.nats_users(tmp_path, NODE)
    server = natsserver.start(tmp_path / store, log_file=tmp_path / f"{store}.log", config=conf)
    buses: dict[str, Bus] = {}
    try:
        buses = {role: await connect(server, users, role) for role in ("runner", "cli", "host_agent")}
        await buses["runner"].ensure_streams(10 * 2**20, 3600)
        yield buses
    finally:
        for bus in buses.values():
            await bus.close()
        server.stop()


async def test_a_cancelled_campaigns_host_run_is_stopped_and_none_starts_after(buses: dict[str, Bus],
                                                                               tmp_path: Path) -> None:
    runner, cli, agent_bus = buses["runner"], buses["cli"], buses["host_agent"]
    watch, stop, agent = await _serving(runner, agent_bus, tmp_path)
    pgid = 0
    try:
        await runner.publish(events.run_requested(_run("long-1"), "podtax/runner"))
        record = await _started(tmp_path / "state")
        pgid = record["pgid"]
        assert guard.group_members(pgid) and guard.marked(record["marker"])
        await asyncio.sleep(1)  # the tool runs
        await cli.publish(events.campaign_cancelled(events.CampaignCancelled(campaign="c")))

        outcomes = await _outcomes(watch, 1, 30)  # the run lasts an hour when it is not stopped
        assert outcomes, "nothing reported 30 s after the cancellation: the run went on"
        stopped = outcomes[0]
        assert stopped["type"] == "podtax.run.failed.v1", "no log of a run cut short"
        assert (stopped["data"]["run"]["run_id"], stopped["data"]["reason"]) == ("long-1", "cancelled")
        assert "stopped after" in stopped["data"]["detail"]
        assert guard.group_members(pgid) == [] and guard.marked(record["marker"]) == [], "every process of it is gone"
        assert not (tmp_path / "state" / guard.RECORD).exists()
        # noted after its failure's publish (the agent, resumed by the publish's ack, writes it then): waited for
        await wait_for(lambda: guard.last_reported(tmp_path / "state") == measured.key(_run("long-1")), 10,
                       "the run noted reported (its redelivery is not run)")
        assert list((tmp_path / "state" / "outbox").glob("*")) == [], "nothing half-stored"

        await runner.publish(events.run_requested(_run("after-1"), "podtax/runner"))  # one more of that campaign
        await runner.publish(events.run_requested(_run("other-1", "d").model_copy(
            update={"params": {"threads": 1, "method": "matrixprod", "ops": 50}}), "podtax/runner"))
        after, other = await _outcomes(watch, 2, 60)
        assert (after["type"], after["data"]["reason"]) == ("podtax.run.failed.v1", "cancelled")
        assert after["data"]["run"]["run_id"] == "after-1" and "not started" in after["data"]["detail"]
        assert (other["type"], other["data"]["run"]["run_id"]) == ("podtax.run.log.v1", "other-1"), "others run"
        assert other["data"]["exit_code"] == 0
    finally:
        if pgid and guard.group_members(pgid):  # before the fix: do not leave an hour of stress-ng behind
            os.killpg(pgid, 9)
        stop.set()
        await asyncio.wait_for(agent, 30)


async def test_an_agent_restarted_after_a_cancellation_still_starts_none_of_its_runs(nats_url: str,
                                                                                      tmp_path: Path) -> None:
    """The cancellation is acked once handled, so a restarted agent does not get it again: a request of that
    campaign it gets then (one not yet delivered, or the runner's resend) must still not start."""
    bus = await Bus.connect(nats_url, "test/agent")
    try:
        await bus.ensure_streams()
        watch = await bus._subscribe(ConsumerSpec("watch", [f"{subjects.RUN_LOG}.>", f"{subjects.RUN_FAILED}.>"]))
        settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE,
                               agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
        first = service.Agent(settings, bus)
        await first.on_cancel(events.campaign_cancelled(events.CampaignCancelled(campaign="c")))
        second = service.Agent(settings, bus)  # the restart
        await second.refresh_facts()
        short = _run("late-1").model_copy(update={"params": {"threads": 1, "method": "matrixprod", "ops": 50}})
        await second.handle(events.run_requested(short, "podtax/runner"))
        [refused] = await _outcomes(watch, 1, 10)
        assert (refused["type"], refused["data"]["reason"]) == ("podtax.run.failed.v1", "cancelled"), refused
        assert "not started" in refused["data"]["detail"]
    finally:
        await bus.close()


async def test_a_malformed_cancellation_is_dead_lettered_and_the_agent_goes_on(buses: dict[str, Bus],
                                                                                tmp_path: Path) -> None:
    """A schema-invalid event on a cancellation's subject (a CLI of another version): host_agent may dead-letter it
    (natsauth.DEAD_LETTERS); before, the refused dead letter raised out of serve() and the agent died."""
    runner, cli, agent_bus = buses["runner"], buses["cli"], buses["host_agent"]
    await cli.js.publish(f"{subjects.CAMPAIGN_CANCELLED}.x", b'{"not": "an event"}')
    letters = await runner.js.pull_subscribe(subjects.dead_letter(f"{subjects.CAMPAIGN_CANCELLED}.x"), "letters",
                                             stream=subjects.DLQ_STREAM)
    _, stop, agent = await _serving(runner, agent_bus, tmp_path)
    try:
        got = []
        for _ in range(20):
            with contextlib.suppress(TimeoutError):
                got = await letters.fetch(1, timeout=1)
            if got or agent.done():
                break
        assert got, "not dead-lettered"
        assert not agent.done(), f"the agent stopped: {agent.exception() if agent.done() else ''}"
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(agent, return_exceptions=True), 30)


async def test_a_cancellation_that_cannot_be_noted_still_stops_the_run(buses: dict[str, Bus], tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Noting the campaign in <state>/cancelled fails (ENOSPC: the state directory may sit on the filesystem fio
    fills): the run in flight is stopped anyway (before, the write came first and raised: the run went on)."""
    runner, cli, agent_bus = buses["runner"], buses["cli"], buses["host_agent"]

    def no_space(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(guard, "note_cancelled", no_space)
    watch, stop, agent = await _serving(runner, agent_bus, tmp_path)
    pgid = 0
    try:
        await runner.publish(events.run_requested(_run("long-1"), "podtax/runner"))
        pgid = (await _started(tmp_path / "state"))["pgid"]
        await cli.publish(events.campaign_cancelled(events.CampaignCancelled(campaign="c")))
        outcomes = await _outcomes(watch, 1, 30)
        assert outcomes, "nothing reported 30 s after the cancellation: the run went on"
        assert (outcomes[0]["data"]["run"]["run_id"], outcomes[0]["data"].get("reason")) == ("long-1", "cancelled")
        assert guard.group_members(pgid) == []
        assert not agent.done()
    finally:
        if pgid and guard.group_members(pgid):
            os.killpg(pgid, 9)
        stop.set()
        await asyncio.wait_for(asyncio.gather(agent, return_exceptions=True), 30)


def test_nats_permissions_older_than_the_agent_stop_it_at_start_in_one_line(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """NATS run with the permissions of before the cancellations consumer (an unregenerated nats-auth.conf): the
    real agent exits 3 with one line naming the fix, and starts no run (before: it started the queued run, killed
    it 5 s later in a traceback, exit 1)."""
    monkeypatch.setitem(natsauth.ROLE_READ_API, "host_agent", [
        a for a in natsauth.ROLE_READ_API["host_agent"] if subjects.CAMPAIGN_CANCELLED not in a])
    users, conf = localauth.nats_users(tmp_path, NODE)
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log", config=conf)
    try:
        async def queue_a_run() -> None:
            common = config.load(config.Common, nats_url=server.url, nats_user="runner", nats_password=users["runner"])
            bus = await Bus.connect(server.url, "test/runner", auth=natsauth.connect_options(common))
            await bus.ensure_streams(10 * 2**20, 3600)
            await bus.publish(events.run_requested(_run("old-1"), "podtax/runner"))
            await bus.close()

        asyncio.run(queue_a_run())
        env = dict(os.environ, PODTAX_NATS_URL=server.url, PODTAX_NATS_USER=natsauth.node_user(NODE),
                   PODTAX_NATS_PASSWORD=users[natsauth.node_user(NODE)], PODTAX_AGENT_NODE=NODE, PODTAX_HEALTH_PORT="0",
                   PODTAX_AGENT_WORKDIR=str(tmp_path / "work"), PODTAX_AGENT_STATE_DIR=str(tmp_path / "state"))
        done = subprocess.run([sys.executable, "-m", "podtax_host_agent"], env=env, capture_output=True, text=True,
                              timeout=120)
    finally:
        server.stop()
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and "running stress-ng" not in done.stderr, done.stderr
    [line] = [x for x in done.stderr.splitlines() if "older than this agent" in x]
    assert "host-agent-n1~cancels" in line and "nats-auth.conf" in line and "podtax up" in line
    assert not (tmp_path / "state" / guard.RECORD).exists()


async def test_a_facts_publish_nats_refuses_is_logged_and_tried_again(nats_url: str, tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """serve() gathers the facts loop with the consumers, so a facts publish that fails (here: no stream takes it, as
    in a NATS outage or with its stream full) ended the agent and killed the run in flight; it is now logged and
    tried again at the next interval."""
    bus = await Bus.connect(nats_url, "test/agent")  # no streams: every publish fails
    settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE, agent_facts_interval_s=1,
                           agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
    stop = asyncio.Event()
    loop = asyncio.create_task(service.Agent(settings, bus).facts_loop(stop))
    try:
        for _ in range(100):
            if sum("host facts not published" in r.message for r in caplog.records) >= 2 or loop.done():
                break
            await asyncio.sleep(0.1)
        assert not loop.done(), f"the facts loop ended: {loop.exception() if loop.done() else ''}"
        assert sum("host facts not published" in r.message for r in caplog.records) >= 2, "tried again"
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(loop, return_exceptions=True), 30)
        await bus.close()


async def test_a_dead_letter_nats_refuses_is_one_line_and_the_message_dropped(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch,
                                                                              caplog: pytest.LogCaptureFixture) -> None:
    """NATS refuses a dead letter (permissions without the agent's dead letters of cancellations): one error line,
    the message is terminated and the agent goes on (before, the publish's timeout raised out of serve())."""
    monkeypatch.setitem(natsauth.DEAD_LETTERS, "host_agent", [subjects.dead_letter(f"{subjects.RUN_REQUESTED}.host.*")])
    async with _own_nats(tmp_path) as buses:
        await buses["cli"].js.publish(f"{subjects.CAMPAIGN_CANCELLED}.x", b'{"not": "an event"}')
        _, stop, agent = await _serving(buses["runner"], buses["host_agent"], tmp_path)
        pending = -1
        try:
            for _ in range(300):
                if agent.done():
                    break
                if any("could not dead-letter" in r.message for r in caplog.records):
                    cancels = subjects.agent_cancels_consumer(NODE)
                    info = await buses["host_agent"].js.consumer_info(subjects.STREAM, cancels)
                    if (pending := info.num_ack_pending) == 0:
                        break
                await asyncio.sleep(0.1)
            assert not agent.done(), f"the agent stopped: {agent.exception() if agent.done() else ''}"
            [line] = [r.message for r in caplog.records if "could not dead-letter" in r.message]
            assert "schema-invalid" in line and pending == 0, "terminated, not redelivered"
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(agent, return_exceptions=True), 30)


async def test_a_cancellation_waiting_at_start_is_taken_before_the_run_request_it_cancels(buses: dict[str, Bus],
                                                                                          tmp_path: Path) -> None:
    """A run request and its campaign's cancellation both wait when the agent starts, behind the cancellations of
    100 other campaigns (a new node's agent reads every cancellation the stream holds): the run is refused, never
    started (before, the two consumers raced: the run started and was killed when the cancellation came)."""
    runner, cli, agent_bus = buses["runner"], buses["cli"], buses["host_agent"]
    for i in range(100):
        await cli.publish(events.campaign_cancelled(events.CampaignCancelled(campaign=f"old-{i}")))
    await runner.publish(events.run_requested(_run("queued-1"), "podtax/runner"))
    await cli.publish(events.campaign_cancelled(events.CampaignCancelled(campaign="c")))
    watch, stop, agent = await _serving(runner, agent_bus, tmp_path)
    started: list[dict] = []

    async def note_a_start() -> None:  # the run record is written when its process starts, cleared when it ends
        while True:
            with contextlib.suppress(OSError, ValueError):
                started.append(json.loads((tmp_path / "state" / guard.RECORD).read_text()))
            await asyncio.sleep(0.01)

    spy = asyncio.create_task(note_a_start())
    try:
        [outcome] = await _outcomes(watch, 1, 60)
        assert (outcome["data"]["run"]["run_id"], outcome["data"]["reason"]) == ("queued-1", "cancelled"), outcome
        assert "not started" in outcome["data"]["detail"], outcome["data"]["detail"]
        assert started == [], "the run was started"
        assert "old-99" in guard.cancelled_campaigns(tmp_path / "state")
    finally:
        spy.cancel()
        for record in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record["pgid"], 9)
        stop.set()
        await asyncio.wait_for(asyncio.gather(agent, return_exceptions=True), 30)


async def test_cancellations_nats_will_not_count_at_start_leave_the_agent_taking_requests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """NATS refuses the cancellations consumer's info (permissions without it): the agent cannot tell what waits, says
    so in one line and takes run requests anyway (a cancellation still stops its run when it comes)."""
    monkeypatch.setitem(natsauth.ROLE_READ_API, "host_agent", [
        a for a in natsauth.ROLE_READ_API["host_agent"] if ".INFO." not in a])
    async with _own_nats(tmp_path) as buses:
        short = _run("short-1", "d").model_copy(update={"params": {"threads": 1, "method": "matrixprod", "ops": 50}})
        await buses["runner"].publish(events.run_requested(short, "podtax/runner"))
        watch, stop, agent = await _serving(buses["runner"], buses["host_agent"], tmp_path)
        try:
            [outcome] = await _outcomes(watch, 1, 60)
            assert (outcome["type"], outcome["data"]["run"]["run_id"]) == ("podtax.run.log.v1", "short-1"), outcome
            [line] = [r.message for r in caplog.records if "cancellations waiting were not all taken" in r.message]
            assert "0 taken" in line
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(agent, return_exceptions=True), 30)


async def test_a_campaign_name_cancelled_in_an_earlier_nats_runs_again_in_a_new_one(tmp_path: Path) -> None:
    """<state>/cancelled kept names alone, so a campaign named as one cancelled before a NATS reset (its KV gone, the
    name free again: the CLI and the runner refuse a name only while their NATS knows it) had every run refused as
    cancelled, forever. In the NATS it was cancelled in, a later request is still refused, by a restarted agent too;
    in a new NATS the same request (same run id: ids are made from the name and the cell) runs."""
    auth = localauth.nats_users(tmp_path, NODE)
    short = _run("c-1").model_copy(update={"params": {"threads": 1, "method": "matrixprod", "ops": 50}})

    async def serve_once(store: str, cancel: bool, request: events.RunSpec) -> dict:
        """The real agent against a NATS keeping JetStream in `store`, maybe a cancellation of c, then `request`."""
        async with _own_nats(tmp_path, store, auth) as buses:
            watch, stop, agent = await _serving(buses["runner"], buses["host_agent"], tmp_path)
            if cancel:
                await buses["cli"].publish(events.campaign_cancelled(events.CampaignCancelled(campaign="c")))
                for _ in range(300):  # noted
                    if "c" in guard.cancelled_campaigns(tmp_path / "state"):
                        break
                    await asyncio.sleep(0.1)
            await buses["runner"].publish(events.run_requested(request, "podtax/runner"))
            try:
                [outcome] = await _outcomes(watch, 1, 60)
            finally:
                stop.set()
                await asyncio.wait_for(asyncio.gather(agent, return_exceptions=True), 30)
            return outcome

    refused = await serve_once("js1", True, short)
    again = await serve_once("js1", False, short.model_copy(update={"run_id": "c-2"}))  # the agent restarted
    for outcome in (refused, again):
        assert (outcome["type"], outcome["data"]["reason"]) == ("podtax.run.failed.v1", "cancelled"), outcome
        assert "not started" in outcome["data"]["detail"]
    reused = await serve_once("js2", False, short)  # a new NATS: the reset
    assert (reused["type"], reused["data"]["run"]["run_id"]) == ("podtax.run.log.v1", "c-1"), reused
    assert reused["data"]["exit_code"] == 0


async def test_an_older_agents_cancelled_names_are_dropped_in_a_nats_made_after_them(nats_url: str,
                                                                                    tmp_path: Path) -> None:
    """<state>/cancelled written by an agent of before this change (names alone), then NATS reset: its names were
    cancelled in the earlier NATS, and a campaign named so runs (before: refused as cancelled). So does the run
    reported last in the earlier NATS, whose id comes back with its campaign's name (before: skipped as run already,
    nothing reported)."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / guard.CANCELLED).write_text("c\n")
    (state / guard.REPORTED).write_text("d-1")
    for note in (guard.CANCELLED, guard.REPORTED):
        os.utime(state / note, (1e9, 1e9))  # written in 2001, long before this NATS
    bus = await Bus.connect(nats_url, "test/agent")
    stop = asyncio.Event()
    try:
        await bus.ensure_streams()
        watch, stop, agent = await _serving(bus, bus, tmp_path)
        short = _run("c-1").model_copy(update={"params": {"threads": 1, "method": "matrixprod", "ops": 50}})
        await bus.publish(events.run_requested(short, "podtax/runner"))
        await bus.publish(events.run_requested(short.model_copy(update={"run_id": "d-1", "campaign": "d"}),
                                               "podtax/runner"))
        outcomes = await _outcomes(watch, 2, 60)
        assert [(o["type"], o["data"]["run"]["run_id"]) for o in outcomes] == [
            ("podtax.run.log.v1", "c-1"), ("podtax.run.log.v1", "d-1")], outcomes
        stop.set()
        await asyncio.wait_for(agent, 30)
    finally:
        stop.set()
        await bus.close()


def _settings(url: str, tmp_path: Path) -> config.HostAgentSettings:
    return config.load(config.HostAgentSettings, nats_url=url, agent_node=NODE, agent_workdir=tmp_path / "work",
                       agent_state_dir=tmp_path / "state")


async def _blind_agent(nats_url: str, bus: Bus, tmp_path: Path) -> service.Agent:
    """An agent whose start could not read the events stream (NATS too slow to answer)."""
    agent = service.Agent(_settings(nats_url, tmp_path), bus)
    real = bus.js.stream_info

    async def no_answer(*_: object, **__: object) -> None:
        raise TimeoutError

    bus.js.stream_info = no_answer  # type: ignore[method-assign]
    try:
        await agent.learn_stream()
    finally:
        bus.js.stream_info = real  # type: ignore[method-assign]
    return agent


async def test_the_reported_note_names_its_stream_so_a_hosts_clock_behind_the_servers_does_not_forget_it(
        nats_url: str, tmp_path: Path) -> None:
    """<state>/reported was judged by its mtime (the host's clock) against the stream's creation (the server's): a
    host 2 s behind that reported d-1 one second after the stream was made forgot it at restart, and its redelivered
    request ran the benchmark a second time. The note now names the stream it was reported in."""
    bus = await Bus.connect(nats_url, "test/agent")
    try:
        await bus.ensure_streams()
        created = (await bus.js.stream_info(subjects.STREAM)).created
        assert created is not None
        first = service.Agent(_settings(nats_url, tmp_path), bus)
        await first.learn_stream()
        at = events.now()
        log = events.RawLog(run=_run("d-1", "d"), stdout="x", exit_code=0, started_at=at, ended_at=at)
        await first.report(events.raw_log(log, first.source).model_copy(update={"id": "d-1.log"}))
        host_time = created.timestamp() + 1 - 2  # 1 s after the stream was made, on a clock 2 s behind
        os.utime(tmp_path / "state" / guard.REPORTED, (host_time, host_time))
        again = service.Agent(_settings(nats_url, tmp_path), bus)
        await again.learn_stream()
        assert measured.key(log.run) in again.done, "reported in this very NATS, forgotten: its redelivery runs again"
    finally:
        await bus.close()


async def test_names_of_an_earlier_nats_stay_dropped_after_a_start_that_could_not_read_the_stream(
        nats_url: str, tmp_path: Path) -> None:
    """An older agent's list (names alone, 2001); one start cannot read the stream (NATS slow), a cancellation of
    another campaign rewrites the list. Before, it was rewritten names alone with a fresh mtime, and the next start gave
    the 2001 names the current NATS: campaign c refused forever again. Each note now keeps its own time."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / guard.CANCELLED).write_text("c\n")
    os.utime(state / guard.CANCELLED, (1e9, 1e9))
    bus = await Bus.connect(nats_url, "test/agent")
    try:
        await bus.ensure_streams()
        first = await _blind_agent(nats_url, bus, tmp_path)  # every note refused (as designed)
        await first.on_cancel(events.campaign_cancelled(events.CampaignCancelled(campaign="x")))
        second = service.Agent(_settings(nats_url, tmp_path), bus)
        await second.learn_stream()
        assert not second.is_cancelled("c"), f"2001's c counts in this NATS: {guard.cancelled_campaigns(state)}"
        assert second.is_cancelled("x")
    finally:
        await bus.close()


async def test_a_cancellation_asks_for_the_stream_again_when_it_was_unknown(nats_url: str, tmp_path: Path) -> None:
    """The stream unknown at start, a cancellation asks again (at most every STREAM_ASK_S), so its note names the
    stream rather than the host's time."""
    bus = await Bus.connect(nats_url, "test/agent")
    try:
        await bus.ensure_streams()
        agent = await _blind_agent(nats_url, bus, tmp_path)
        agent.stream_asked -= service.STREAM_ASK_S  # that was long ago
        await agent.on_cancel(events.campaign_cancelled(events.CampaignCancelled(campaign="x")))
        created = (await bus.js.stream_info(subjects.STREAM)).created
        assert created is not None and agent.stream == created.isoformat()
        assert guard.cancelled_campaigns(tmp_path / "state") == {"x": agent.stream}
    finally:
        await bus.close()


async def test_with_the_stream_unknown_at_start_every_noted_name_is_refused(nats_url: str, tmp_path: Path) -> None:
    """The stream cannot be read at start: a campaign noted cancelled in any NATS is refused (the safe side). No test
    held it before (is_cancelled without it passed every agent test)."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    guard.note_cancelled(state, {"c": "2026-12-01T10:00:00.123456+00:00"})
    bus = await Bus.connect(nats_url, "test/agent")
    try:
        agent = await _blind_agent(nats_url, bus, tmp_path)
        assert agent.stream == "" and agent.is_cancelled("c")
    finally:
        await bus.close()


async def test_cancellations_delivered_but_still_queued_locally_are_taken_before_requests(
        buses: dict[str, Bus], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fetch that returns before its whole batch came (a slow link; here FETCH_TIMEOUT_S cut short) leaves
    cancellations in the subscription's queue: delivered, so consumer info's num_pending is 0. Before, the start-up
    drain returned without them and left them to the cancels consumer, racing the run requests' consumer."""
    cli, agent_bus = buses["cli"], buses["host_agent"]
    for i in range(100):
        await cli.publish(events.campaign_cancelled(events.CampaignCancelled(campaign=f"old-{i}")))
    await cli.publish(events.campaign_cancelled(events.CampaignCancelled(campaign="c")))
    agent = service.Agent(_settings("nats://127.0.0.1:1", tmp_path), agent_bus)
    cancels = await service.cancels_subscription(agent)
    monkeypatch.setattr(busconsume, "FETCH_TIMEOUT_S", 0.0001)
    await agent.take_waiting_cancellations(cancels, asyncio.Event())
    assert "c" in agent.cancelled and natsfetch.queued(cancels) == 0, "the drain returned, some still queued"


async def test_the_start_up_drain_of_cancellations_ends_when_the_agent_is_stopped(buses: dict[str, Bus],
                                                                                  tmp_path: Path) -> None:
    """SIGTERM while the agent takes the cancellations waiting at start: it stops taking them (before, it went on
    until all were taken or WAITING_CANCELS_S, 30 s, passed)."""
    for i in range(150):
        await buses["cli"].publish(events.campaign_cancelled(events.CampaignCancelled(campaign=f"old-{i}")))
    agent = service.Agent(_settings("nats://127.0.0.1:1", tmp_path), buses["host_agent"])
    cancels = await service.cancels_subscription(agent)
    stop = asyncio.Event()
    stop.set()
    await agent.take_waiting_cancellations(cancels, stop)
    assert len(agent.cancelled) < 150, "every cancellation taken after the stop"
