"""Each node's host agent has a NATS identity of its own (natsauth.node_user): every node's agent logged in as the
one `host_agent` user, so one node's password (on a host, as root) let an attacker pull and ack another node's run
requests, re-create its consumer and publish its host run logs, failures and facts, i.e. forge the host side of
another node's cells. A real nats-server with the users `podtax up` writes, for two nodes, a and b."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import ConsumerConfig
from podtax import config, events, localauth, natsauth, natsserver, subjects
from podtax.bus import Bus, ConsumerSpec
from podtax.busconsume import REASON_HEADER
from podtax.cli.main import main
from podtax_host_agent import service
from podtax_host_agent.__main__ import main as agent_main

from tests.integration.secured import refused

REFUSED = (NatsTimeout, TimeoutError, NoRespondersError)
NOW = events.now()


def _run(node: str, run_id: str = "r1", **params: object) -> events.RunSpec:
    return events.RunSpec(run_id=run_id, campaign="c", node=node, env="host", test="stress-ng-cpu",
                          params={"threads": 1, "method": "matrixprod", **params})


@pytest.fixture(name="nodes")
async def nodes_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[dict[str, Bus]]:
    """Connections as the runner, the parser and the agents of nodes a and b; the streams made. NATS runs with
    deploy/k8s's configuration for those nodes (`podtax nats-auth conf a b`), its passwords in its environment."""
    users = {user: f"pw-{user}-0123456789" for user in [*natsauth.SERVICE_ROLES, "host_agent.a", "host_agent.b"]}
    for user, password in users.items():
        monkeypatch.setenv(natsauth.password_env(user), password)
    conf = tmp_path / "auth.conf"
    localauth.write_private(conf, natsauth.deploy_auth_conf(["a", "b"]))
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log", config=conf)
    buses: dict[str, Bus] = {}
    try:
        for user in ("runner", "parser", "host_agent.a", "host_agent.b"):
            password = users[user]
            settings = config.load(config.Common, nats_url=server.url, nats_user=user, nats_password=password)
            buses[user.removeprefix("host_agent.")] = await Bus.connect(server.url, f"test/{user}",
                                                                         auth=natsauth.connect_options(settings))
        await buses["runner"].ensure_streams(10 * 2**20, 3600)
        yield buses
    finally:
        for bus in buses.values():
            await bus.close()
        server.stop()


async def test_a_node_cannot_publish_another_nodes_host_results(nodes: dict[str, Bus]) -> None:
    a, runner = nodes["a"], nodes["runner"]
    for node, refuse in (("b", True), ("a", False)):
        log = events.raw_log(events.RawLog(run=_run(node), stdout="x", exit_code=0, started_at=NOW, ended_at=NOW), "t")
        failed = events.run_failed(events.RunFailed(run=_run(node), stage="agent", reason="r", detail="d"), "t")
        facts = events.host_facts(events.HostFacts(node=node, kernel="6", os="d", cpu_model="x", hw_threads=2, arch="x",
                                                   tool_versions={}), "t")
        dead = subjects.dead_letter(subjects.join(subjects.RUN_REQUESTED, "host", node))
        for subject in (log.subject, failed.subject, facts.subject, dead):
            assert await refused(a, subject) is refuse, subject
    info = await runner.js.stream_info(subjects.STREAM, subjects_filter="podtax.>")
    assert set(info.state.subjects or {}) == {"podtax.run.log.host.a", "podtax.run.failed.host.a",
                                              "podtax.host.facts.a"}


async def test_a_node_cannot_take_another_nodes_run_requests(nodes: dict[str, Bus]) -> None:
    a, b, runner = nodes["a"], nodes["b"], nodes["runner"]
    b_requests = subjects.join(subjects.RUN_REQUESTED, "host", "b")
    b_spec = ConsumerSpec(subjects.agent_consumer("b"), [b_requests])
    b_sub = await b._subscribe(b_spec)
    await runner.publish(events.run_requested(_run("b"), "podtax/runner"))
    # a re-creating b's consumer (another filter unhooks it, the same one is still not a's), or making its own on b's
    # requests, or one named as its own over b's requests; reading b's consumer
    for attempt in (a.js.add_consumer(subjects.STREAM, ConsumerConfig(name=b_spec.durable, filter_subject="podtax.x")),
                    a.js.add_consumer(subjects.STREAM, ConsumerConfig(name=b_spec.durable, filter_subject=b_requests)),
                    a.js.add_consumer(subjects.STREAM, ConsumerConfig(name="spy", filter_subject=b_requests)),
                    a.js.add_consumer(subjects.STREAM, ConsumerConfig(name=subjects.agent_consumer("a"),
                                                                      filter_subject=b_requests)),
                    a.js.consumer_info(subjects.STREAM, b_spec.durable)):
        with pytest.raises(REFUSED):
            await asyncio.wait_for(attempt, 2)
    stolen = await a.js.pull_subscribe_bind(durable=b_spec.durable, stream=subjects.STREAM)
    with pytest.raises((NatsTimeout, TimeoutError)):
        await stolen.fetch(1, timeout=1)
    # nor b's cancellations (named after b), nor b's inboxes, to read its deliveries or forge one
    with pytest.raises(REFUSED):
        await asyncio.wait_for(a.js.add_consumer(subjects.STREAM, ConsumerConfig(
            name=subjects.agent_cancels_consumer("b"), filter_subject=f"{subjects.CAMPAIGN_CANCELLED}.*")), 2)
    seen: list[bytes] = []

    async def spy(msg) -> None:  # type: ignore[no-untyped-def]
        seen.append(msg.data)

    await a.nc.subscribe(f"{natsauth.inbox_prefix(natsauth.node_user('b'))}.>", cb=spy)
    await a.nc.flush()
    (msg,) = await b_sub.fetch(1, timeout=5)
    assert events.decode(msg.data).data.run.node == "b" and seen == [], "b's request was b's alone"
    assert (await b.js.consumer_info(subjects.STREAM, b_spec.durable)).config.filter_subject == b_requests
    await msg.ack()


async def test_a_node_does_its_own_work_end_to_end(nodes: dict[str, Bus], tmp_path: Path) -> None:
    """Node a's real agent, as a's user: its consumers, a run, its log, its facts."""
    runner = nodes["runner"]
    watch = await runner._subscribe(ConsumerSpec("watch", [f"{subjects.RUN_LOG}.>", f"{subjects.HOST_FACTS}.>"]))
    settings = config.load(config.HostAgentSettings, nats_url="nats://127.0.0.1:1", agent_node="a",
                           agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
    stop = asyncio.Event()
    agent = asyncio.create_task(service.serve(settings, nodes["a"], stop))
    try:
        await runner.publish(events.run_requested(_run("a", ops=50), "podtax/runner"))
        got: set[str] = set()
        deadline = asyncio.get_running_loop().time() + 120
        while got != {"podtax.run.log.host.a", "podtax.host.facts.a"} and not agent.done():
            assert asyncio.get_running_loop().time() < deadline, got
            try:
                msgs = await watch.fetch(10, timeout=1)
            except (NatsTimeout, TimeoutError):
                continue
            for m in msgs:
                got.add(m.subject)
                await m.ack()
        assert not agent.done(), agent
        log = await runner.js.get_last_msg(subjects.STREAM, "podtax.run.log.host.a")
        assert events.decode(log.data).data.exit_code == 0
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(agent, return_exceptions=True), 30)


async def test_the_parser_refuses_a_log_whose_node_is_not_its_subjects(nodes: dict[str, Bus]) -> None:
    """A node may publish on its own subjects only; a log there naming another node in its payload would pass for
    that node's run: it is dead-lettered, saying why, and never parsed."""
    a, parser = nodes["a"], nodes["parser"]
    forged = events.raw_log(events.RawLog(run=_run("b"), stdout="x", exit_code=0, started_at=NOW, ended_at=NOW), "t")
    await a.js.publish(subjects.join(subjects.RUN_LOG, "host", "a"), events.encode(forged))
    seen: list[events.Event] = []
    stop = asyncio.Event()

    async def handle(event: events.Event) -> None:
        seen.append(event)

    consuming = asyncio.create_task(parser.consume(ConsumerSpec("parser", [f"{subjects.RUN_LOG}.>"]), handle, stop))
    try:
        sub = await nodes["runner"].js.pull_subscribe(f"{subjects.DLQ_PREFIX}.>", durable="probe",
                                                      stream=subjects.DLQ_STREAM)
        (dead,) = await sub.fetch(1, timeout=20)
    finally:
        stop.set()
        await asyncio.wait_for(consuming, 30)
    assert seen == []
    assert dead.subject == subjects.dead_letter("podtax.run.log.host.a")
    assert (dead.headers or {})[REASON_HEADER].startswith(
        "misplaced: a podtax.run.log.v1 event belongs on podtax.run.log.host.b, not on podtax.run.log.host.a")


async def test_the_entry_podtax_nats_auth_node_prints_logs_that_node_in(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`podtax nats-auth node n1`: the entry, in a real NATS, lets the agent of n1 log in with the password printed
    for its env file and publish n1's logs, not another node's; a mistyped name is one line, status 2."""
    assert main(["nats-auth", "node", "n1"]) == 0
    out = capsys.readouterr().out
    env = dict(line.removeprefix("#   ").split("=", 1) for line in out.splitlines() if line.startswith("#   "))
    assert env["PODTAX_NATS_USER"] == "host_agent.n1" and env["PODTAX_AGENT_NODE"] == "n1"
    [entry] = [line for line in out.splitlines() if not line.startswith("#")]
    runner_entry = natsauth.user_entry("runner", "pw-runner-0123456789")
    conf = tmp_path / "auth.conf"
    localauth.write_private(conf, f"authorization {{\n  users = [\n    {runner_entry}\n    {entry}\n  ]\n}}\n")
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log", config=conf)
    try:
        runner = await Bus.connect(server.url, "test/runner", auth={"user": "runner",
                                                                     "password": "pw-runner-0123456789"})
        await runner.ensure_streams(10 * 2**20, 3600)
        settings = config.load(config.Common, nats_url=server.url, nats_user=env["PODTAX_NATS_USER"],
                               nats_password=env["PODTAX_NATS_PASSWORD"])
        agent = await Bus.connect(server.url, "test/n1", auth=natsauth.connect_options(settings))
        assert not await refused(agent, "podtax.run.log.host.n1")
        assert await refused(agent, "podtax.run.log.host.n2")
        await agent.close()
        await runner.close()
    finally:
        server.stop()
    assert main(["nats-auth", "node", "n 1"]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.mark.parametrize(("user", "says"), [("host_agent.b", "is the NATS user of node b's agent"),
                                            ("host_agent", "was every node's agent's user")])
def test_an_agent_with_another_nodes_user_stops_at_start_saying_so(user: str, says: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """With b's user, a's agent had every consumer refused, and stopped saying its permissions were older than
    it; with the one user of every node before, NATS refused its login. One line now, status 2, before NATS."""
    for name, value in {"PODTAX_NATS_URL": "nats://127.0.0.1:1", "PODTAX_NATS_USER": user,
                        "PODTAX_NATS_PASSWORD": "pw", "PODTAX_AGENT_NODE": "a",
                        "PODTAX_AGENT_WORKDIR": str(tmp_path / "work"),
                        "PODTAX_AGENT_STATE_DIR": str(tmp_path / "state")}.items():
        monkeypatch.setenv(name, value)
    assert agent_main([]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert says in line and "host_agent.a" in line
