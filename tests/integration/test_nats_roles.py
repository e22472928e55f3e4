"""NATS permissions per role, past the subjects each publishes (test_nats_auth): who creates podtax's streams,
that nobody changes one, whose inboxes a role reads, and what the host agent (its password is on every node)
may consume and publish. A real nats-server started with the configuration `podtax up` generates."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from podtax import events, natsauth, natsserver, subjects
from podtax.bus import Bus, BusError, ConsumerSpec

from tests.integration.secured import buses_fixture, connect, refused, secured_fixture  # noqa: F401 - fixtures

NOW = events.now()
RUN = events.RunSpec(run_id="r1", campaign="c", node="n1", env="host", test="sysbench-cpu", params={"threads": 1})


async def test_only_a_streams_owner_creates_it(secured) -> None:  # type: ignore[no-untyped-def]
    """On a fresh NATS every role could create podtax's streams until the services had: a host agent could make
    the events stream first, with its own subjects, limits or republish. Now only each stream's owner
    (natsauth.CREATORS) may; a service started before it waits, a command says whom to start."""
    from nats.js.api import StreamConfig

    server, users = secured
    bus = {role: await connect(server, users, role) for role in natsauth.ROLES}
    try:
        for role in ("host_agent", "parser", "cli", "scheduler", "analyzer"):
            with pytest.raises((NatsTimeout, TimeoutError, NoRespondersError)):
                await asyncio.wait_for(bus[role].js.add_stream(
                    StreamConfig(name=subjects.STREAM, subjects=[f"{subjects.RUN_LOG}.>"], max_msgs=1)), 2)
        with pytest.raises((NatsTimeout, TimeoutError, NoRespondersError)):
            await asyncio.wait_for(bus["runner"].js.create_key_value(bucket=subjects.SCORES_BUCKET), 2)
        assert [s.config.name for s in await bus["runner"].js.streams_info()] == []
        with pytest.raises(BusError, match="stream PODTAX does not exist yet.*start podtax-runner first"):
            await bus["cli"].ensure_streams()
        parser = asyncio.create_task(bus["parser"].ensure_streams(10 * 2**20, 3600, wait=True))
        scores = asyncio.create_task(bus["scheduler"].kv(subjects.SCORES_BUCKET, wait=True))
        await asyncio.sleep(2)
        assert not parser.done() and not scores.done(), "they wait for the owners"
        await bus["runner"].ensure_streams(10 * 2**20, 3600)
        await bus["analyzer"].kv(subjects.SCORES_BUCKET)
        await asyncio.wait_for(parser, 10)
        kv = await asyncio.wait_for(scores, 10)
        assert (await kv.status()).bucket == subjects.SCORES_BUCKET
        info = await bus["parser"].js.stream_info(subjects.STREAM)
        assert info.config.subjects == list(subjects.STREAM_SUBJECTS) and info.config.max_bytes == 10 * 2**20
    finally:
        for b in bus.values():
            await b.close()


async def test_the_runner_cannot_make_a_stream_copy_results_elsewhere(buses: dict[str, Bus]) -> None:
    """The runner applied stream limits by updating the streams, so its login could add a republish: every
    result copied to a subject of its choosing. No role may update a stream now."""
    from nats.js.api import RePublish

    runner = buses["runner"]
    for name in natsauth.STREAMS[:2]:
        config_ = (await runner.js.stream_info(name)).config
        config_.republish = RePublish(src=">", dest="_INBOX.copy.>")
        with pytest.raises((NatsTimeout, TimeoutError, NoRespondersError)):
            await asyncio.wait_for(runner.js.update_stream(config_), 2)
        assert (await runner.js.stream_info(name)).config.republish is None


async def test_a_service_refuses_a_stream_that_republishes(tmp_path: Path) -> None:
    """A stream made before the permissions (or by a NATS admin) with a republish, source or mirror would go on
    publishing past them: the services refuse to start on it, naming it and the fix."""
    from nats.js.api import RePublish, StreamConfig

    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    bus = await Bus.connect(server.url, "test/open", auth={})
    try:
        await bus.js.add_stream(StreamConfig(name=subjects.STREAM, subjects=list(subjects.STREAM_SUBJECTS),
                                             republish=RePublish(src=f"{subjects.RUN_RESULT}.>", dest="copy.>")))
        with pytest.raises(BusError, match=r"PODTAX republishes podtax.run.result.> to copy.>.*nats stream edit"):
            await bus.ensure_streams(10 * 2**20, 3600)
    finally:
        await bus.close()
        server.stop()


async def test_no_role_reads_or_writes_another_roles_inbox(buses: dict[str, Bus]) -> None:
    """Every role could subscribe to `_INBOX.>` and publish there: as the host agent, an audit received every
    event the other services pulled (JetStream delivers them to the puller's inbox) and could publish into their
    inboxes. Each role now has inboxes of its own (natsauth.inbox_prefix), the only ones it may subscribe to."""
    agent, parser, runner = buses["host_agent"], buses["parser"], buses["runner"]
    seen: list[bytes] = []

    async def spy(msg) -> None:  # type: ignore[no-untyped-def]
        seen.append(msg.data)

    for wildcard in ("_INBOX.>", "_INBOX_parser.>", ">"):
        await agent.nc.subscribe(wildcard, cb=spy)
    await agent.nc.flush()
    sub = await parser.js.pull_subscribe(f"{subjects.RUN_LOG}.>", durable="parser-spied", stream=subjects.STREAM)
    await runner.js.publish(f"{subjects.RUN_LOG}.host.n1", b'{"secret": 1}')
    (msg,) = await sub.fetch(1, timeout=5)
    assert msg.data == b'{"secret": 1}'
    await agent.nc.flush()
    assert seen == [], "the host agent read the parser's deliveries"
    waiting = asyncio.create_task(sub.fetch(1, timeout=2))
    await asyncio.sleep(0.5)
    await agent.nc.publish(sub._sub.subject, b'{"forged": 1}')
    await agent.nc.flush()
    with pytest.raises((NatsTimeout, TimeoutError)):
        await waiting
    assert sub._sub.subject.startswith("_INBOX_parser.")


async def test_the_host_agent_makes_no_consumer_but_its_own(buses: dict[str, Bus]) -> None:
    """The host agent's password is on every node, and with a consumer of its own on any subject it read every
    campaign, log and result (or get each message by its sequence). It may make only consumers of run requests
    for hosts, pull only from those, and get no message."""
    from nats.js.api import ConsumerConfig

    agent, cli = buses["host_agent"], buses["cli"]
    await cli.js.publish(subjects.join(subjects.CAMPAIGN_SUBMITTED, "c"), b'{"secret": 1}')
    campaigns = f"{subjects.CAMPAIGN_SUBMITTED}.>"
    for attempt in (agent.js.add_consumer(subjects.STREAM, ConsumerConfig(name="spy", filter_subject=campaigns)),
                    agent.js.add_consumer(subjects.STREAM, durable_name="spy", filter_subject=campaigns),
                    agent.js.add_consumer(subjects.STREAM, ConsumerConfig(filter_subject=campaigns)),
                    agent.js.add_consumer(subjects.STREAM, ConsumerConfig(name="spy")),
                    agent.js.pull_subscribe(campaigns, stream=subjects.STREAM),
                    agent.js.get_msg(subjects.STREAM, 1), agent.js.get_last_msg(subjects.STREAM, campaigns)):
        with pytest.raises((NatsTimeout, TimeoutError, NoRespondersError)):
            await asyncio.wait_for(attempt, 2)
    assert [c.name for c in await cli.js.consumers_info(subjects.STREAM)] == []
    sub = await agent._subscribe(ConsumerSpec("host-agent-n1", [subjects.join(subjects.RUN_REQUESTED, "host", "n1")]))
    await buses["runner"].js.publish(subjects.join(subjects.RUN_REQUESTED, "host", "n1"), b"{}")
    assert [m.data for m in await sub.fetch(1, timeout=5)] == [b"{}"]


async def test_the_host_agent_publishes_for_host_runs_only(buses: dict[str, Bus]) -> None:
    """The host agent could publish raw logs and failures of pod runs (env kubernetes) of any node: one node's
    compromised agent could set the pod side of every cell; and dead letters of any subject, pushing the real
    ones out. It publishes those of host runs only now, and dead letters of host run requests."""
    agent, runner = buses["host_agent"], buses["runner"]
    pod_run = RUN.model_copy(update={"env": "kubernetes"})
    forged = [events.raw_log(events.RawLog(run=pod_run, stdout="x", exit_code=0, started_at=NOW, ended_at=NOW), "x"),
              events.run_failed(events.RunFailed(run=pod_run, stage="agent", reason="r", detail="d"), "x")]
    dead_result = subjects.dead_letter(subjects.join(subjects.RUN_RESULT, "host", "n1"))
    for subject in [e.subject for e in forged] + [dead_result]:
        assert await refused(agent, subject)
    assert not await refused(agent, subjects.dead_letter(subjects.join(subjects.RUN_REQUESTED, "host", "n1")))
    await agent.publish(events.raw_log(events.RawLog(run=RUN, stdout="x", exit_code=0, started_at=NOW,
                                                     ended_at=NOW), "test/agent"))
    info = await runner.js.stream_info(subjects.STREAM, subjects_filter="podtax.>")
    assert info.state.subjects == {subjects.join(subjects.RUN_LOG, "host", "n1"): 1}
