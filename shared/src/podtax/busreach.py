"""What answers at a NATS address a connection failed to use, said as the fix (podtax.bus's connect errors): nothing
(start one), another program (an HTTP server, a greeting in another protocol), a load balancer closing connections,
a nats-server slower than the connect timeout, or a server refusing this client (its identity, its TLS)."""

from __future__ import annotations

import asyncio
import os
from urllib.parse import urlsplit


def start_hint(url: str) -> str:
    """What to do about an unreachable NATS. At the default address with no PODTAX_NATS_URL, the CLI found no
    up.json under PODTAX_DATA_DIR (default .podtax): a `podtax up --data-dir DIR` may be running elsewhere."""
    from podtax.config import DEFAULT_NATS_URL

    if url == DEFAULT_NATS_URL and not os.environ.get("PODTAX_NATS_URL"):
        return ("start one with `podtax up`, or set PODTAX_DATA_DIR to the --data-dir of a running one, "
                "or point PODTAX_NATS_URL at a running server")
    return "start one with `podtax up` or point PODTAX_NATS_URL at a running server"


SILENT = ("something accepts connections there but did not answer as NATS does (an HTTP server, such as "
          "nats-server's monitoring port 8222; another program; a load balancer whose server does not answer; or a "
          "nats-server that hangs): point PODTAX_NATS_URL at a nats-server's client port (4222 by default)")
NOT_NATS = ("something listens there but does not speak NATS (it answered in another protocol): point PODTAX_NATS_URL "
            "at nats-server's client port (4222 by default)")
CLOSED = ("something accepts connections there but closes them without a word (a load balancer with no ready "
          "nats-server behind it? a server at its connection limit?): check the nats-server behind that address")
PROBE_S = 2.0  # how long the probe after a failed connection waits to connect, then for a first line


def slow(timeout: float) -> str:
    """A nats-server's INFO came, but after the connect timeout (review r5 L3)."""
    return (f"a nats-server answered there, but later than the connect timeout ({timeout:g} s): it is overloaded, or "
            "the link is slow; try again (commands wait a third of PODTAX_CLI_TIMEOUT for it, at most 5 s: raise "
            "PODTAX_CLI_TIMEOUT; services wait 5 s and are restarted by their supervisor)")


async def probe(url: str, timeout: float) -> str | None:
    """After a connection that failed before NATS's INFO line: what answers at the first server of `url`, said as
    the hint (SILENT, CLOSED, NOT_NATS, or slow() when a NATS INFO line comes late); None when nothing accepts a
    TCP connection (audit hH: an HTTP server speaks only when asked)."""
    first = url.split(",")[0].strip()
    try:
        where = urlsplit(first if "://" in first else f"nats://{first}")  # nats-py reads 'host:4222' so too
        reader, writer = await asyncio.wait_for(asyncio.open_connection(where.hostname, where.port or 4222), PROBE_S)
    except (OSError, TimeoutError, ValueError):
        return None
    try:
        heard = await asyncio.wait_for(reader.read(64), PROBE_S)
        if not heard:
            return CLOSED
    except TimeoutError:
        return SILENT
    except OSError:  # reset: as closed
        return CLOSED
    finally:
        writer.close()
    return slow(timeout) if heard.startswith(b"INFO ") else NOT_NATS


def refused_hint(why: str) -> str | None:
    """The fix when a running server refused this client (its identity, its TLS), where "start one" misled (audit
    hH); None when nothing answered."""
    text = why.lower()
    if "expecting info" in text:  # a program that greets in another protocol (SSH, SMTP, ...)
        return NOT_NATS
    if "authorization violation" in text or "authentication" in text:
        return ("the server refused this identity: set PODTAX_NATS_USER and PODTAX_NATS_PASSWORD (or PODTAX_NATS_NKEY, "
                "or PODTAX_NATS_CREDS) to an account it knows")
    if "certificate required" in text:
        return ("the server asks for a client certificate: set PODTAX_NATS_TLS_CERT and PODTAX_NATS_TLS_KEY to one "
                "its CA signed")
    if "mismatch, certificate is not valid for" in text:
        host = why.rsplit("valid for", 1)[1].split("'")[1] if why.count("'") >= 2 else "that host"
        return (f"the server's certificate was not issued for {host}: name the server in PODTAX_NATS_URL as its "
                "certificate does")
    if "certificate_verify_failed" in text:
        return ("the server's certificate is not signed by a CA this client trusts: set PODTAX_NATS_TLS_CA to the "
                "certificate (PEM) of the CA that signed it")
    return None
