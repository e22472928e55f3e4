"""TLS that cannot be stripped. nats-py upgrades a connection to TLS only when the server's first line (INFO) says
tls_required, and sends CONNECT (with the user's password) in plain text otherwise, even when the client was given a
CA, a client certificate or a tls:// URL: a man in the middle removing tls_required read the password (review r5).
:class:`TlsOnlyClient` refuses, before CONNECT is written, a server that does not require TLS when TLS is configured;
:func:`unencrypted` checks the connection made. Both use nats-py internals (`_process_info`, `_transport`): their
tests (tests/faults/test_nats_tls_required.py) fail if nats-py changes them."""

from __future__ import annotations

from typing import Any

from nats import errors
from nats.aio.client import Client

NO_TLS = ("the server does not require TLS while this client is configured for it (PODTAX_NATS_TLS_CA, a client "
          "certificate or a tls:// URL): nothing was sent to it; the server must require TLS (a `tls {}` block in its "
          "configuration; if it has one, something between removed it), or unset PODTAX_NATS_TLS_CA to connect "
          "without TLS")


class TlsRefused(RuntimeError):
    """The first connection found no TLS where it was configured: raised through nats-py's connect (which retries
    only its own errors), so the command stops at once."""


def tls_configured(nc: Client) -> bool:
    """Whether TLS was asked for: an SSL context given (natsauth: PODTAX_NATS_TLS_*) or a tls:// server."""
    server = getattr(nc, "_current_server", None)
    scheme = server.uri.scheme if server is not None else ""
    return bool(nc.options.get("tls")) or scheme == "tls"


class TlsOnlyClient(Client):
    """A nats-py client that sends nothing to a server whose INFO does not require TLS when TLS is configured."""

    async def _process_info(self, info: dict[str, Any], initial_connection: bool = False) -> None:
        server = getattr(self, "_current_server", None)
        websocket = server is not None and server.uri.scheme in ("ws", "wss")  # wss is TLS from the start
        if initial_connection and not websocket and tls_configured(self) and not info.get("tls_required") \
                and not self.options.get("tls_handshake_first"):
            if self.is_reconnecting:  # nats-py logs it (error callback) and tries again
                raise errors.Error(f"nats: {NO_TLS}")
            raise TlsRefused(NO_TLS)
        await super()._process_info(info, initial_connection)


def unencrypted(nc: Client) -> bool:
    """Whether a connection made with TLS configured runs without it (a second guard: nats-py's own path)."""
    server = getattr(nc, "_current_server", None)
    if not tls_configured(nc) or (server is not None and server.uri.scheme in ("ws", "wss")):
        return False
    writer = getattr(getattr(nc, "_transport", None), "_io_writer", None)
    if writer is None:  # nats-py changed: pinned by the tests
        return True
    return writer.get_extra_info("ssl_object") is None
