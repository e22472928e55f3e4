"""What every service's `main(argv)` shares: settings, logging, the bus, signals, a health port."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

from podtax import metrics, natsauth, telemetry
from podtax.bus import Bus, BusError, redact, stop_on_signals
from podtax.busstreams import Stopped
from podtax.config import Common, ConfigError, load

S = TypeVar("S", bound=Common)
log = logging.getLogger("podtax.service")


async def serve_health(port: int, bus: Bus, host: str) -> asyncio.base_events.Server:
    """Minimal HTTP probes: GET /healthz (alive: 200), GET /readyz (200 while connected to NATS), and
    GET /metrics (Prometheus text format, see podtax.metrics). Every service serves it on PODTAX_HEALTH_PORT,
    at PODTAX_HEALTH_HOST (loopback unless set: the images set 0.0.0.0 for the kubelet's probes)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            content_type = "text/plain"
            if request.startswith(b"GET /metrics"):
                ok = True
                body, content_type = metrics.exposition()
            else:
                ok = bus.nc.is_connected or not request.startswith(b"GET /readyz")
                body = b"ok\n" if ok else b"nats disconnected\n"
            status = b"200 OK" if ok else b"503 Service Unavailable"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: " + content_type.encode()
                         + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n"
                         + body)
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    try:
        return await asyncio.start_server(handle, host, port)
    except OSError as exc:  # an address not of this host, a name that does not resolve, a port in use
        raise cannot_listen(exc, host, port) from None


def cannot_listen(exc: OSError, host: str, port: int, port_setting: str = "PODTAX_HEALTH_PORT",
                  host_setting: str = "PODTAX_HEALTH_HOST") -> ConfigError:
    """A port that cannot be listened on, in one line naming the setting to change (a traceback before)."""
    why = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else exc.strerror or str(exc)
    if exc.errno == errno.EADDRINUSE:
        return ConfigError(f"{port_setting}: cannot listen on {host}:{port} ({why}): choose a free port, or stop "
                           "what holds it")
    return ConfigError(f"{host_setting}: cannot listen on {host}:{port} ({why}): set an address of this host "
                       "(127.0.0.1, or 0.0.0.0 for all)")


def listening_socket(host: str, port: int, port_setting: str, host_setting: str) -> socket.socket:
    """A TCP socket bound to host:port for a server to serve on (uvicorn's `sockets`), or ConfigError naming the
    setting: uvicorn logged 'ERROR: [Errno 98] ...' and the service went on to exit 3, NATS's status (audit hD)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)  # uvicorn's choice for `host`
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: TIME_WAIT is no owner
        sock.bind((host, port))
    except OSError as exc:  # an address not of this host, a name that does not resolve, a port in use
        sock.close()
        raise cannot_listen(exc, host, port, port_setting, host_setting) from None
    return sock


async def service_streams(name: str, settings: Common, bus: Bus, stop: asyncio.Event) -> bool:
    """The streams as set (waiting for their owner's: Streams.ensure_streams); False when `stop` was set meanwhile.
    Streams that cannot be as set (no room on the server's disk) raise ConfigError: one line, no traceback. NATS
    gone meanwhile (a request timed out, disconnected) is waited out; a SIGTERM then stops it cleanly (it ended in
    a traceback: nats-py's request timeout)."""
    while True:
        reconnects = bus.nc.stats["reconnects"]
        try:
            await bus.ensure_streams(settings.nats_stream_max_bytes, settings.nats_stream_max_age_s, wait=True,
                                     stop=stop, max_msgs_per_subject=settings.nats_stream_max_msgs_per_subject)
            return True
        except Stopped as exc:  # SIGTERM before another role made the streams: a clean stop
            log.info("podtax-%s %s", name, exc)
            return False
        except BusError as exc:
            raise ConfigError(str(exc)) from None
        except TimeoutError:  # nats-py's request timeout is one
            # no answer on a live connection: not NATS gone; unless that connection is a new one (the request went
            # to a server that died, nats-server restarted: a traceback, exit 1)
            if bus.nc.is_connected and bus.nc.stats["reconnects"] == reconnects:
                raise
            if stop.is_set():
                log.info("podtax-%s stopped while NATS was unreachable, before its streams were checked", name)
                return False
            log.warning("NATS went away while podtax-%s checked its streams: checking again", name)


def _print_help(name: str, lines: list[str]) -> int:
    """Print `--help`'s lines: 0; standard output that cannot be written, 1: `podtax-parser --help | head` (its reader
    gone: nothing to say, as `podtax ... | head`) or `> f` on a full disk (one line). Both ended in a traceback."""
    try:
        print("\n".join(lines), flush=True)  # not sys.stdout.write: with stdout closed (`>&-`) sys.stdout is None
        return 0
    except OSError as exc:
        with contextlib.suppress(OSError):  # the interpreter's last flush of what is still buffered cannot fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if exc.errno != errno.EPIPE:
            print(f"podtax-{name}: cannot write its output: {exc.strerror}", file=sys.stderr)
        return 1


def run_service(name: str, settings_cls: type[S], body: Callable[[S, Bus, asyncio.Event], Awaitable[None]],
                argv: list[str] | None = None, prepare: Callable[[S], None] | None = None,
                streams_first: bool = True) -> int:
    """Load settings (exit 2 naming the bad variable), `prepare` with them (it may raise ConfigError: exit 2),
    connect, make or wait for the streams (service_streams; `streams_first=False`: `body` does, when it may
    serve something before), run `body` until SIGTERM, drain."""
    if argv and argv[0] in ("-h", "--help"):
        return _print_help(name, [f"podtax-{name}: configured by environment variables:"] + [
            f"  PODTAX_{field.upper():32} {info.description or ''} (default {info.default!r})"
            for field, info in settings_cls.model_fields.items()])
    if argv:  # a service takes no arguments: a mistyped one must not start it with the defaults
        print(f"podtax-{name}: unexpected argument {argv[0]!r}: it is configured by PODTAX_* environment "
              f"variables (podtax-{name} --help lists them)", file=sys.stderr)
        return 2
    try:
        settings = load(settings_cls)
        if prepare is not None:
            prepare(settings)
    except ConfigError as exc:
        print(f"podtax-{name}: {exc.line}", file=sys.stderr)
        return 2
    telemetry.setup(name, settings.log_level, settings.log_format, settings.otel_exporter)

    async def _main() -> int:
        try:
            bus = await Bus.connect(settings.nats_url, f"podtax/{name}", auth=natsauth.connect_options(settings))
        except BusError as exc:
            log.error("%s", exc)
            return 3
        stop = stop_on_signals()
        health = None
        try:
            if settings.health_port:
                health = await serve_health(settings.health_port, bus, settings.health_host)
            if streams_first and not await service_streams(name, settings, bus, stop):
                return 0
            log.info("podtax-%s started (NATS %s)", name, redact(settings.nats_url))
            try:
                await body(settings, bus, stop)
            except BusError as exc:  # NATS refuses what the service needs (its permissions): one line
                log.error("%s", exc)
                return 3
            except Stopped:  # SIGTERM while a request waited for NATS to be back (natsagain): a clean stop
                log.info("podtax-%s stopped while waiting for NATS", name)
        finally:
            if health:
                health.close()
            await bus.close()
            log.info("podtax-%s stopped", name)
        return 0

    try:
        return asyncio.run(_main())
    except ConfigError as exc:  # found once running (the analyzer's DuckDB file cannot be opened): said last
        print(f"podtax-{name}: {exc.line}", file=sys.stderr)
        return 2
