"""TLS configured, server without it (review r5 HIGH). nats-py takes up TLS only when the server's INFO says
tls_required, and sent CONNECT, the password in it, in plain text otherwise: with PODTAX_NATS_TLS_CA set (or a
tls:// URL), a man in the middle removing tls_required from INFO read the password. Here a real nats-server without
TLS (its INFO is what such a man in the middle sends) behind a recording TCP relay: nothing of the identity may pass,
and the line names the fix. These tests also pin the nats-py internals podtax.natstls uses (`_process_info` called
with the first INFO before CONNECT is written; `_transport._io_writer`): they fail if nats-py changes them."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client
from podtax.bus import Bus, BusError
from podtax.natstls import unencrypted

from tests.faults.configured_nats import configured_nats
from tests.faults.test_nats_refusals import certificate

PASSWORD = "s3cret-never-in-clear"


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[str]:
    """A real nats-server without TLS, asking for a password."""
    with configured_nats(tmp_path, f"authorization {{ user: a, password: {PASSWORD} }}\n") as server:
        yield server.url


async def relay(target: str, heard: bytearray) -> tuple[asyncio.Server, int]:
    """A TCP relay to `target` keeping what clients send (the man in the middle's view)."""
    host, port = target.rsplit("//", 1)[1].rsplit(":", 1)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, keep: bytearray | None) -> None:
        try:
            while data := await reader.read(65536):
                if keep is not None:
                    keep.extend(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(pipe(reader, up_writer, heard), pipe(up_reader, writer, None))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


@pytest.mark.parametrize("scheme", ["nats", "tls"])
def test_no_password_goes_out_without_tls(plain: str, scheme: str) -> None:
    """Before: connected (CONNECT with the password went through the relay in plain text)."""
    heard = bytearray()

    async def run() -> str:
        server, port = await relay(plain, heard)
        try:
            auth = {"tls": ssl.create_default_context(), "user": "a", "password": PASSWORD}  # as PODTAX_NATS_TLS_CA
            bus = await Bus.connect(f"{scheme}://127.0.0.1:{port}", "t", timeout=3, auth=auth)
            await bus.close()
            return "connected"
        except BusError as exc:
            return str(exc)
        finally:
            server.close()

    said = asyncio.run(run())
    assert PASSWORD.encode() not in heard and b"CONNECT" not in heard, bytes(heard[:300])
    assert "does not require TLS" in said and "tls {}" in said and "PODTAX_NATS_TLS_CA" in said, said
    assert "start one" not in said, said


def test_the_connection_check_sees_plain_text(plain: str) -> None:
    """The second guard (natstls.unencrypted, read after connecting): a plain nats-py client, TLS configured, connected
    to the plain server is seen unencrypted; without TLS configured it is not asked."""
    async def run() -> tuple[bool, bool]:
        seen = []
        for tls in (ssl.create_default_context(), None):
            nc = Client()
            await nc.connect(plain.replace("//", f"//a:{PASSWORD}@"), allow_reconnect=False, connect_timeout=3,
                             **({"tls": tls} if tls else {}))
            seen.append(unencrypted(nc))
            await nc.close()
        return seen[0], seen[1]

    assert asyncio.run(run()) == (True, False)


def test_a_server_requiring_tls_connects(tmp_path: Path) -> None:
    """The guards let real TLS through (its transport has an ssl_object)."""
    cert, key = certificate(tmp_path, "server", "IP:127.0.0.1")

    async def run(url: str) -> bool:
        bus = await Bus.connect(url, "t", timeout=3, auth={"tls": ssl.create_default_context(cafile=cert)})
        try:
            return unencrypted(bus.nc)
        finally:
            await bus.close()

    with configured_nats(tmp_path, f'tls {{ cert_file: "{cert}", key_file: "{key}" }}\n') as server:
        assert asyncio.run(run(server.url)) is False
