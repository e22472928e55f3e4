"""Run podtax services in-process (as asyncio tasks) against a real nats-server, for tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import nats
import pytest
from podtax import config, events, natsserver, subjects
from podtax.bus import Bus
from podtax.cli.main import main as cli


class Services:
    def __init__(self, nats_url: str, tmp: Path) -> None:
        self.nats_url = nats_url
        self.tmp = tmp
        self.stop = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []
        self.buses: list[Bus] = []
        self.db = tmp / "podtax.duckdb"

    def settings(self, cls: type[Any], **kw: Any) -> Any:
        base = {"nats_url": self.nats_url, "log_format": "text"}
        return config.load(cls, **{**base, **kw})

    async def start(self, name: str, serve: Callable[[Any, Bus, asyncio.Event], Awaitable[None]],
                    settings: Any) -> None:
        bus = await Bus.connect(self.nats_url, f"test/{name}")
        await bus.ensure_streams()
        self.buses.append(bus)
        task = asyncio.create_task(serve(settings, bus, self.stop), name=name)
        self.tasks.append(task)
        _LIVE.append(task)

    async def analyzer(self, port: int = 0, **kw: Any) -> None:
        from podtax import natsserver
        from podtax_analyzer.service import serve

        await self.start("analyzer", serve, self.settings(
            config.AnalyzerSettings, analyzer_db=self.db, analyzer_port=port or natsserver.free_port(), **kw))

    async def parser(self) -> None:
        from podtax_parser.service import serve

        await self.start("parser", serve, self.settings(config.ParserSettings))

    async def agent(self, node: str = "node-1", **kw: Any) -> None:
        from podtax_host_agent.service import serve

        await self.start("agent", serve, self.settings(config.HostAgentSettings, agent_node=node,
                                                       agent_workdir=self.tmp / "work", **kw))

    async def runner(self, kubeconfig: Path | None = None) -> asyncio.Task[None]:
        from podtax_runner.service import serve

        settings = self.settings(config.RunnerSettings, runner_kubeconfig=kubeconfig,
                                 runner_kubernetes=kubeconfig is not None)
        await self.start("runner", serve, settings)
        return self.tasks[-1]

    async def campaign_stack(self, node: str, analyzer_port: int | None = None) -> None:
        """What a campaign on `node` runs through: the analyzer (on `analyzer_port`, when given), the parser, the host
        agent of `node` and the runner; returns once the runner has recorded the node (the agent's host facts)."""
        if analyzer_port is not None:
            await self.analyzer(port=analyzer_port)
        await self.parser()
        await self.agent(node=node)
        await self.runner()
        bus = await Bus.connect(self.nats_url, "test/stack")
        try:
            await node_known(bus, node)
        finally:
            await bus.close()

    async def crash(self, task: asyncio.Task[None]) -> None:
        """Kill a service abruptly: cancel its task and drop its connection without draining."""
        i = self.tasks.index(task)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        bus = self.buses[i]
        await bus.nc.close()
        del self.tasks[i], self.buses[i]
        _LIVE.remove(task)

    async def close(self) -> None:
        self.stop.set()
        for t in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(t, 15)
        for b in self.buses:
            await b.close()

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Read the analyzer's DuckDB. In one process DuckDB shares the database instance per path,
        so this works while the analyzer task holds its connection."""
        if not self.db.exists():
            return []
        con = duckdb.connect(str(self.db))
        try:
            return con.execute(sql, params or []).fetchall()
        finally:
            con.close()


_LIVE: list[asyncio.Task[None]] = []


async def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll `predicate`; fail early (with its traceback) if a service task died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for task in _LIVE:
            if task.done() and not task.cancelled() and task.exception():
                raise AssertionError(f"service {task.get_name()} crashed") from task.exception()
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@contextlib.asynccontextmanager
async def services(nats_url: str, tmp: Path) -> AsyncIterator[Services]:
    s = Services(nats_url, tmp)
    try:
        yield s
    finally:
        await s.close()
        _LIVE.clear()


@contextlib.contextmanager
def nats_with_max_payload(tmp: Path, max_payload: int) -> Iterator[str]:
    """A real nats-server (store and log in `tmp`) whose max_payload is `max_payload` bytes; its URL."""
    conf = tmp / "nats.conf"
    conf.write_text(f"max_payload: {max_payload}\n")
    server = natsserver.start(tmp / "jetstream", log_file=tmp / "nats.log", config=conf)
    try:
        yield server.url
    finally:
        server.stop()


async def run_cli(*args: str) -> int:
    """The real `podtax` CLI with `args`, in a thread (the services run on this event loop); its exit status."""
    return await asyncio.to_thread(cli, list(args))


@dataclass
class Submitted:
    """A campaign submitted by :func:`submitted_campaign`: its services, a bus to read its header with, the
    analyzer's API port (PODTAX_API_URL) and the spec file."""

    services: Services
    bus: Bus
    port: int
    spec: Path


@contextlib.asynccontextmanager
async def submitted_campaign(nats_url: str, tmp: Path, monkeypatch: pytest.MonkeyPatch, spec: str,
                             node: str) -> AsyncIterator[Submitted]:
    """The campaign `spec` (YAML) on `node` submitted with the real CLI (exit status 0 asserted): PODTAX_NATS_URL
    names `nats_url`, PODTAX_API_URL the analyzer on a free port; the campaign stack runs until the block ends."""
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    path = tmp / "c.yaml"
    path.write_text(spec)
    async with services(nats_url, tmp) as s:
        await s.campaign_stack(node, analyzer_port=port)
        bus = await Bus.connect(nats_url, "test")
        try:
            assert await run_cli("campaign", "submit", str(path)) == 0
            yield Submitted(s, bus, port, path)
        finally:
            await bus.close()


async def node_known(bus: Bus, node: str, timeout: float = 30.0) -> None:
    """Wait until the runner has recorded `node`'s host facts (a campaign naming it is then planned)."""
    kv = await bus.kv(subjects.RUNNER_BUCKET)
    deadline = time.monotonic() + timeout
    while not await Bus.kv_json(kv, subjects.node_key(node)):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for the runner to record node {node}")
        await asyncio.sleep(0.2)


def host_facts(i: int, source: str = "tests") -> events.HostFactsV1:
    """A small valid event (host facts of node n<i>) for tests of the bus itself."""
    return events.host_facts(events.HostFacts(node=f"n{i}", kernel="6.1", os="debian", cpu_model="x",
                                              hw_threads=2, arch="x86_64", tool_versions={}), source)


async def event_data(nc: nats.aio.client.Client, subject: str) -> asyncio.Queue:
    """A queue of the `data` of each event published on `subject` (a wildcard too) from now on."""
    queue: asyncio.Queue = asyncio.Queue()

    async def got(msg: nats.aio.msg.Msg) -> None:
        await queue.put(json.loads(msg.data)["data"])

    await nc.subscribe(subject, cb=got)
    return queue


async def stream_messages(url: str) -> int:
    """Messages in the podtax stream now, as the NATS server counts them."""
    nc = await nats.connect(url)
    try:
        return (await nc.jetstream().stream_info(subjects.STREAM)).state.messages
    finally:
        await nc.close()
