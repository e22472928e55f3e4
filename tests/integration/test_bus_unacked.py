"""A server that dies with publishes in flight never acks them: Bus.publish_many must not wait for those
acks forever (real nats-server, killed with SIGKILL and restarted on its port and store).

Found by an audit (Dec 3): nats-server killed while the parser published a batch; the parser's handler
waited on the lost acks for good, its consumer kept 512 messages in progress (never redelivered), 440
of 3,000 runs were never stored, and nothing was logged."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from podtax import natsserver
from podtax.bus import Bus, BusError, Unacked, Unavailable

from tests.integration.harness import host_facts, stream_messages, wait_for


@pytest.fixture
def own_server(tmp_path: Path):
    """A nats-server this test may kill (the shared fixture's would be stopped twice)."""
    servers = [natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")]
    yield servers
    for s in servers:
        s.stop()


def client_commands(buf: bytes) -> tuple[list[bytes], bytes]:
    """The whole NATS client commands at the front of `buf` (a PUB or HPUB with its payload) and the rest."""
    commands: list[bytes] = []
    start = 0
    while (end := buf.find(b"\r\n", start)) >= 0:
        line = buf[start:end]
        payload = int(line.rsplit(b" ", 1)[1]) + 2 if line[:4].upper() in (b"PUB ", b"HPUB") else 0
        if end + 2 + payload > len(buf):
            break
        commands.append(buf[start:end + 2 + payload])
        start = end + 2 + payload
    return commands, buf[start:]


def is_publish(command: bytes) -> bool:
    return command[:4].upper() in (b"PUB ", b"HPUB")


@dataclass
class Link:
    """One client connection through the relay and its connection to the server."""

    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    held: bool = False

    def close(self) -> None:
        self.client.close()
        self.server.close()


class Relay:
    """A TCP relay on 127.0.0.1 to a nats-server's port, both ways, command by command from the client. hold():
    what the clients connected so far send is read and dropped (its publishes counted), and their connections
    stay open (the server's end closing too) until drop(); later connections pass."""

    def __init__(self, server_port: int) -> None:
        self.server_port = server_port
        self.url = ""
        self.links: list[Link] = []
        self.dropped_publishes = 0
        self._dropped = asyncio.Condition()

    def hold(self) -> None:
        for link in self.links:
            link.held = True

    def drop(self) -> None:
        for link in [x for x in self.links if x.held]:
            link.close()
            self.links.remove(link)

    async def swallowed(self, n: int) -> None:
        """Returns once the relay has dropped `n` publishes."""
        async with self._dropped:
            await self._dropped.wait_for(lambda: self.dropped_publishes >= n)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.server_port)
        except OSError:  # the server is down: so is this connection
            writer.close()
            return
        link = Link(writer, server_writer)
        self.links.append(link)
        await asyncio.gather(self._to_server(reader, link), self._to_client(server_reader, link))

    async def _to_server(self, reader: asyncio.StreamReader, link: Link) -> None:
        rest = b""
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                commands, rest = client_commands(rest + data)
                if link.held:
                    async with self._dropped:
                        self.dropped_publishes += sum(map(is_publish, commands))
                        self._dropped.notify_all()
                    continue
                link.server.write(b"".join(commands))
                await link.server.drain()
        link.close()

    async def _to_client(self, reader: asyncio.StreamReader, link: Link) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                link.client.write(data)
                await link.client.drain()
        if not link.held:  # a held connection ends at drop()
            link.close()


@contextlib.asynccontextmanager
async def relay_to(server_port: int) -> AsyncIterator[Relay]:
    relay = Relay(server_port)
    listener = await asyncio.start_server(relay.serve, "127.0.0.1", 0)
    relay.url = f"nats://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    try:
        yield relay
    finally:
        listener.close()
        for link in relay.links:
            link.close()


async def test_publishes_whose_acks_died_with_the_server_fail_the_batch_instead_of_hanging(own_server) -> None:
    """The server never sees the 50 publishes: a relay between it and the client reads and drops them (the test
    waited for them to reach a SIGSTOPped server's socket; under load some had not, the client re-sent them to the
    restarted server and got their acks: DID NOT RAISE Unacked)."""
    server = own_server[0]
    async with relay_to(server.port) as relay:
        b = await Bus.connect(relay.url, "tests/unacked")
        try:
            await b.ensure_streams()
            relay.hold()  # from here what the client sends reaches no server
            task = asyncio.create_task(b.publish_many([host_facts(i) for i in range(50)], timeout=2.0))
            swallowed = asyncio.create_task(relay.swallowed(50))
            # all 50 have left the client (or publish_many gave up first); the 20 s only stop a hang
            await asyncio.wait({swallowed, task}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
            swallowed.cancel()
            server.proc.kill()
            server.proc.wait()
            own_server.append(natsserver.start(server.store_dir, port=server.port))
            relay.drop()  # the client's connection dies with its server: what it sent there is lost
            with pytest.raises(Unacked) as caught:
                await asyncio.wait_for(task, 20)  # before: waited on the lost acks forever (the bound, not a timing)
            assert isinstance(caught.value, Unavailable) and isinstance(caught.value, BusError)
            assert "published events" in str(caught.value)
            assert not b.js._publish_async_futures  # cancelled: their slots are free for the retry
            await wait_for(lambda: b.nc.is_connected, 30, "the client's reconnect through the relay")
            # none of the publishes the relay dropped was stored (all 50, unless publish_many gave up first)
            assert await stream_messages(own_server[-1].url) <= 50 - relay.dropped_publishes
            await b.ensure_streams()
            await b.publish_many([host_facts(i, source="retry") for i in range(50)], timeout=10.0)
            assert await stream_messages(own_server[-1].url) >= 50
        finally:
            await b.close()


async def test_closing_a_bus_whose_server_died_stops_its_reconnect_loop(own_server) -> None:
    """Bus.close did nothing while nats-py was reconnecting: its reconnect loop ran on until asyncio.run's
    last cancellation, which that loop can swallow; CI found `podtax import` hung at exit after NATS died."""
    server = own_server[0]
    b = await Bus.connect(server.url, "tests/close", timeout=0.5)
    server.proc.kill()
    server.proc.wait()
    for _ in range(100):
        if b.nc.is_reconnecting:
            break
        await asyncio.sleep(0.05)
    assert b.nc.is_reconnecting
    await asyncio.wait_for(b.close(), 10)  # before: close never ended the reconnect loop
    assert b.nc.is_closed, "the client still reconnects after close"
    assert b.nc._reconnection_task is None or b.nc._reconnection_task.done()
