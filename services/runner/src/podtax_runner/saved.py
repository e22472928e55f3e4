"""The runner's start: its saved state read from its KV bucket (Runner.load) while NATS may stop or restart.

NATS lost meanwhile (nats-server restarting) is waited for and the read made again (natsagain: one warning line,
up to 60 s); a SIGTERM meanwhile is a clean stop (Stopped); NATS that does not answer (stopped, paused, or not back
within the wait) is one error line naming its URL and what to do, and the runner exits 3 as when it cannot reach NATS
at all. Before, the read's 'nats: timeout' ended the runner in a RuntimeError and its traceback (exit 1)."""

from __future__ import annotations

from nats.js.kv import KeyValue
from podtax import kvscan
from podtax.bus import Bus, BusError, redact
from podtax.natsagain import Stopped, again_if_reconnected


async def values(bus: Bus, kv: KeyValue, pattern: str) -> list[tuple[str, bytes]]:
    """(key, value) of every live key of `kv` matching `pattern` (a server-side filtered watch: one pass), read
    again once NATS is back when it was lost meanwhile."""
    found = await again_if_reconnected(bus.nc, lambda: kvscan.entries(kv, pattern))
    return [(k, v) for k, v in found if v]


def unanswered(exc: BaseException, url: str, stopping: bool) -> Exception:
    """What the runner stops with when NATS failed it (`exc`, not answering or away) while it started: Stopped
    when it was told to stop meanwhile, else BusError (one line, exit 3) naming the URL and what to do."""
    if stopping:
        return Stopped("stopped while waiting for NATS")
    why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return BusError(f"NATS at {redact(url)} did not answer while podtax-runner read its saved state ({why}): check "
                    "that nats-server is running and reachable there, then start podtax-runner again (it resumes "
                    "from that state)")
