"""NATS doors (issue 12, item 7): per-service users with subject permissions (a service can publish
only its own event families), the services' identity from settings, and stream limits from settings.
A real nats-server started with the configuration `podtax up` generates."""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path

import pytest
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from podtax import config, events, localauth, natsauth, natsserver, subjects
from podtax.bus import Bus, BusError, ConsumerSpec, redact
from podtax.config import Common

from tests.integration.secured import buses_fixture, connect, refused, secured_fixture  # noqa: F401 - fixtures

NOW = events.now()
RUN = events.RunSpec(run_id="r1", campaign="c", node="n", env="host", test="sysbench-cpu", params={"threads": 1})


def test_generated_files_are_private(tmp_path: Path) -> None:
    users, conf = localauth.nats_users(tmp_path, "n1")
    assert set(users) == {*natsauth.SERVICE_ROLES, "host_agent.n1"} and len(set(users.values())) == len(users)
    for path in (conf, tmp_path / localauth.NATS_USERS_FILE):
        assert path.stat().st_mode & 0o777 == 0o600
    assert localauth.nats_users(tmp_path, "n1")[0] == users, "kept across restarts"


async def test_anonymous_clients_are_refused(secured) -> None:  # type: ignore[no-untyped-def]
    server, users = secured
    with pytest.raises(BusError):
        await Bus.connect(server.url, "test/anonymous", timeout=1.0, auth={})
    with pytest.raises(BusError) as info:
        await Bus.connect(server.url.replace("://", "://parser:wrong@"), "test/wrong", timeout=1.0, auth={})
    assert "wrong" not in str(info.value), "the password is never printed"


async def test_the_parser_cannot_publish_a_score(buses: dict[str, Bus]) -> None:
    parser, analyzer = buses["parser"], buses["analyzer"]
    # forged score: as an event, as a KV entry the scheduler reads, and as a campaign
    assert await refused(parser, subjects.join(subjects.SCORE_UPDATED, "host", "n"))
    assert await refused(parser, f"$KV.{subjects.SCORES_BUCKET}.local.host.n")
    assert await refused(parser, subjects.join(subjects.CAMPAIGN_SUBMITTED, "evil"))
    assert await refused(parser, subjects.join(subjects.RUN_REQUESTED, "host", "n"))
    # ... while its own family goes through, and the analyzer may publish scores
    res = events.result(events.Result(run=RUN, tool="sysbench", tool_version="1", parser_version="t",
                                      started_at=NOW, ended_at=NOW,
                                      metrics=[events.Metric(name="events_per_second", value=1.0, unit="1/s",
                                                             higher_is_better=True)]), "test/parser")
    await parser.publish(res)
    assert not await refused(analyzer, subjects.join(subjects.SCORE_UPDATED, "host", "n"))
    info = await analyzer.js.stream_info(subjects.STREAM)
    assert info.state.messages == 2, "the forged messages never reached the stream"


async def test_services_consume_and_use_their_kv_under_permissions(buses: dict[str, Bus]) -> None:
    runner, parser = buses["runner"], buses["parser"]
    kv = await runner.kv(subjects.RUNNER_BUCKET)
    await kv.put("node.n", b"{}")
    assert (await kv.get("node.n")).value == b"{}"
    assert await refused(parser, f"$KV.{subjects.RUNNER_BUCKET}.node.n")
    await runner.publish(events.raw_log(events.RawLog(run=RUN, stdout="x", exit_code=0, started_at=NOW,
                                                      ended_at=NOW), "test/runner"))
    got: list[events.Envelope] = []
    stop = asyncio.Event()

    async def handler(event: events.Envelope) -> None:
        got.append(event)
        stop.set()

    task = asyncio.create_task(parser.consume(ConsumerSpec("parser-test", [f"{subjects.RUN_LOG}.>"]), handler, stop))
    await asyncio.wait_for(stop.wait(), 10)
    await task
    assert got and got[0].type == "podtax.run.log.v1"


async def test_streams_get_limits_from_settings(buses: dict[str, Bus]) -> None:
    info = await buses["runner"].js.stream_info(subjects.STREAM)
    assert info.config.max_bytes == 10 * 2**20 and info.config.max_age == 3600
    await buses["runner"].ensure_streams()  # the CLI: creates when missing, never loosens the limits
    assert (await buses["runner"].js.stream_info(subjects.STREAM)).config.max_bytes == 10 * 2**20
    dlq = await buses["runner"].js.stream_info(subjects.DLQ_STREAM)
    assert dlq.config.max_bytes == 10 * 2**20


def test_settings_check_the_identity(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError, match="go together"):
        config.load(Common, nats_user="parser")
    with pytest.raises(config.ConfigError, match="is not a readable file"):
        config.load(Common, nats_creds=tmp_path / "missing.creds")
    with pytest.raises(config.ConfigError, match="choose one"):
        (tmp_path / "seed").write_text("SUAX")
        config.load(Common, nats_user="a", nats_password="b", nats_nkey=tmp_path / "seed")
    assert redact("nats://cli:s3cret@h:1,nats://h2:2") == "nats://cli:***@h:1,nats://h2:2"


def test_deploy_permissions_are_generated() -> None:
    path = Path(__file__).parents[2] / "deploy" / "k8s" / "nats-auth.conf"
    assert path.read_text() == natsauth.deploy_auth_conf(), "run `make docs` to regenerate it"


async def test_an_nkey_identity_connects(tmp_path: Path) -> None:
    """PODTAX_NATS_NKEY: the seed file signs the server's nonce (nkeys, a locked dependency; an audit found
    `ModuleNotFoundError: No module named 'nkeys'` in every service given an nkey or a .creds file)."""
    import os

    import nkeys

    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    public = nkeys.from_seed(bytearray(seed)).public_key.decode()
    (tmp_path / "user.nk").write_bytes(seed)
    conf = tmp_path / "nkey.conf"
    conf.write_text(f'authorization {{ users = [ {{ nkey: "{public}" }} ] }}\n')
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log", config=conf)
    try:
        settings = config.load(Common, nats_url=server.url, nats_nkey=tmp_path / "user.nk")
        bus = await Bus.connect(server.url, "test/nkey", auth=natsauth.connect_options(settings))
        try:
            await bus.ensure_streams()
            await bus.publish(events.host_facts(events.HostFacts(node="n1", kernel="6.1", os="debian", cpu_model="x",
                                                                 hw_threads=2, arch="x86_64", tool_versions={}),
                                                "test"))
        finally:
            await bus.close()
        with pytest.raises(BusError):  # and without the key, nobody gets in
            await Bus.connect(server.url, "test/anonymous", timeout=2)
    finally:
        server.stop()


async def test_no_role_can_purge_cut_or_unhook_what_others_rely_on(secured) -> None:  # type: ignore[no-untyped-def]
    """Logged in as the host agent (its password is on every node), an audit purged the dead letters, cut
    them to one message by a stream update and deleted the parser's consumer (parsing then stopped)."""
    server, users = secured
    runner = await connect(server, users, "runner")
    agent = await connect(server, users, "host_agent")
    parser = await connect(server, users, "parser")
    try:
        await runner.ensure_streams(10 * 2**20, 3600)
        await parser.js.add_consumer(subjects.STREAM, durable_name="parser")
        await runner.js.publish(f"{subjects.DLQ_PREFIX}.podtax.x", b"kept")
        for attempt in (agent.js.purge_stream(subjects.DLQ_STREAM),
                        agent.js.delete_consumer(subjects.STREAM, "parser"),
                        agent.js.delete_msg(subjects.DLQ_STREAM, 1),
                        agent.ensure_streams(2**20, 3600)):  # its settings differ: warned, not applied
            with contextlib.suppress(NatsTimeout, TimeoutError, NoRespondersError):
                await asyncio.wait_for(attempt, 2)
        dlq = await runner.js.stream_info(subjects.DLQ_STREAM)
        assert dlq.state.messages == 1 and dlq.config.max_bytes == 10 * 2**20
        assert (await runner.js.consumer_info(subjects.STREAM, "parser")).name == "parser"
        await runner.ensure_streams(10 * 2**20, 3600)  # the same settings: nothing to update, no request made
        await runner.ensure_streams(20 * 2**20, 3600)  # other limits: warned (`nats stream edit`), not applied
        assert (await runner.js.stream_info(subjects.STREAM)).config.max_bytes == 10 * 2**20
    finally:
        await parser.close()
        await agent.close()
        await runner.close()


async def test_no_role_can_rehook_or_drain_another_roles_consumer(secured) -> None:  # type: ignore[no-untyped-def]
    """Logged in as the host agent, an audit re-created the parser's consumer with another filter (parsing
    stopped without a word); pulling from it and acking would take raw logs from the parser for good."""
    server, users = secured
    parser = await connect(server, users, "parser")
    agent = await connect(server, users, "host_agent")
    runner = await connect(server, users, "runner")
    try:
        await runner.ensure_streams(10 * 2**20, 3600)
        await parser._subscribe(ConsumerSpec("parser", [f"{subjects.RUN_LOG}.>"], 5))
        await agent.js.publish(f"{subjects.RUN_LOG}.host.n1", b"{}")
        elsewhere = "podtax.none"
        attempts = [agent.js.add_consumer(subjects.STREAM, durable_name="parser", filter_subject=elsewhere),
                    agent.js.add_consumer(subjects.STREAM, name="parser", filter_subject=elsewhere),
                    agent.js.add_consumer(subjects.STREAM, durable_name="runner-outcomes", filter_subject=elsewhere)]
        for attempt in attempts:
            with pytest.raises((NatsTimeout, TimeoutError, NoRespondersError)):
                await asyncio.wait_for(attempt, 2)
        stolen = await agent.js.pull_subscribe_bind(durable="parser", stream=subjects.STREAM)
        with pytest.raises((NatsTimeout, TimeoutError)):
            await stolen.fetch(1, timeout=1)
        info = await parser.js.consumer_info(subjects.STREAM, "parser")
        assert info.config.filter_subject == f"{subjects.RUN_LOG}.>" and info.num_pending == 1
        assert info.num_ack_pending == 0, "the host agent pulled the parser's message"
        own = await agent._subscribe(ConsumerSpec("host-agent-n1", [f"{subjects.RUN_REQUESTED}.host.n1"], 5))
        assert own is not None  # its own consumer is still its to make
    finally:
        await runner.close()
        await agent.close()
        await parser.close()


def test_the_consumer_table_names_every_service_consumer() -> None:
    """natsauth.CONSUMERS must list each service's durable names, or another role could take them."""
    from podtax_analyzer import service as analyzer
    from podtax_parser import service as parser
    from podtax_runner import service as runner

    source = Path(runner.__file__).read_text()
    runner_names = {n for n in natsauth.CONSUMERS["runner"] if f'"{n}"' in source}
    assert runner_names == set(natsauth.CONSUMERS["runner"]) and runner.OUTCOMES in runner_names
    assert 'ConsumerSpec("analyzer"' in Path(analyzer.__file__).read_text()
    assert 'ConsumerSpec("parser"' in Path(parser.__file__).read_text()
    assert set(re.findall(r'ConsumerSpec\("([\w-]+)"', source)) <= runner_names


async def test_no_role_can_make_a_stream_that_publishes_for_it(buses: dict[str, Bus]) -> None:
    """Logged in as the host agent, an audit created a stream of its own on an inbox subject that republished
    each message to `podtax.run.result...`, and one that sourced the events stream: the server itself then
    published a forged result (or score, run request, campaign) past every subject permission. No role may
    create a stream other than podtax's own, nor restore one from a snapshot, nor change podtax's streams
    (a republish added to one does the same)."""
    from nats.js.api import RePublish, StreamConfig, StreamSource

    runner, agent, cli, parser = buses["runner"], buses["host_agent"], buses["cli"], buses["parser"]
    forged = subjects.join(subjects.RUN_RESULT, "host", "victim")
    for bus in (agent, cli):
        for config_ in (StreamConfig(name="EVIL", subjects=["_INBOX.evil.x"],
                                     republish=RePublish(src="_INBOX.evil.x", dest=forged)),
                        StreamConfig(name="EVIL2", sources=[StreamSource(name=subjects.STREAM)],
                                     republish=RePublish(src=">", dest=f"$KV.{subjects.SCORES_BUCKET}.x"))):
            with pytest.raises((NatsTimeout, TimeoutError, NoRespondersError)):
                await asyncio.wait_for(bus.js.add_stream(config_), 2)
        await bus.nc.publish("_INBOX.evil.x", b'{"forged": true}')
        await bus.nc.flush()
        with pytest.raises((NatsTimeout, TimeoutError, NoRespondersError)):
            await bus.nc.request("$JS.API.STREAM.RESTORE.EVIL3", b"{}", timeout=1)
    # ... nor give podtax's streams a republish of their own: as the parser, the dead letters' stream
    # republished into the scores bucket (only the analyzer may write it) and into run requests
    for dest in (f"$KV.{subjects.SCORES_BUCKET}.local.host.victim.t.m.x",
                 subjects.join(subjects.RUN_REQUESTED, "host", "victim")):
        config_ = (await parser.js.stream_info(subjects.DLQ_STREAM)).config
        config_.republish = RePublish(src=f"{subjects.DLQ_PREFIX}.forged", dest=dest)
        with pytest.raises((NatsTimeout, TimeoutError, NoRespondersError)):
            await asyncio.wait_for(parser.js.update_stream(config_), 2)
    await parser.js.publish(f"{subjects.DLQ_PREFIX}.forged", b'{"forged": true}')
    await parser.ensure_streams(20 * 2**20, 3600)  # its settings differ: warned, not applied
    assert (await runner.js.stream_info(subjects.STREAM)).state.messages == 0
    assert (await runner.js.stream_info(subjects.DLQ_STREAM)).config.max_bytes == 10 * 2**20
    assert {s.config.name for s in await runner.js.streams_info()} == {subjects.STREAM, subjects.DLQ_STREAM}
    # ... while what the services do still works: their streams, KV buckets, consumers and reads
    await agent.ensure_streams()
    await cli.ensure_streams()
    await runner.kv(subjects.RUNNER_BUCKET)  # the runner's to create (natsauth.CREATORS), the CLI's to use
    kv = await cli.kv(subjects.RUNNER_BUCKET)
    await kv.put("campaign.c", b"{}")
    assert (await kv.get("campaign.c")).value == b"{}"
    assert await Bus.kv_keys(kv) == ["campaign.c"]
    await agent._subscribe(ConsumerSpec("host-agent-n1", [f"{subjects.RUN_REQUESTED}.host.n1"], 5))
