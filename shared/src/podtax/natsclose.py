"""Close a nats-py connection without waiting 15 s for a server that hangs (paused, overloaded, or a network that
drops packets without a reset), draining it as before when it is live.

nats-py's drain() drains the subscriptions, bounded by the connection's drain_timeout (5 s in podtax), then flushes
with its default 10 s timeout, which drain_timeout does not bound (nats-py 2.16 Client.drain: `await self.flush()`
in its finally; nats.go issue 580 asks the same of Go's drain): a service told to stop while its server hung took
15 s to exit. Cancelling the drain half-way leaves nats-py's gathered subscription drains with an exception never
retrieved (a traceback in the log), so drain_within first asks the server for a PONG (flush) for up to DRAIN_S: a
server that answers is drained as before; one that does not is closed at once. What it has not confirmed by then
is what a server that hangs would not take anyway. Nothing is acked sooner for it: a service acks a message only
once what it did with it is committed, so closing early can only lose acks still unsent (the message comes back,
its outcomes de-duplicated), never send one.

Not bounded: a server that answers the PING and hangs before the drain is done (a window as long as a live drain,
milliseconds) still takes nats-py's whole drain, 5 + 10 s, as before (bench/bench_close_nats_hung.py: 15.03 s, the
same as nats-py's drain of a server hung throughout; drain_within of one hung before the PING 3.01 s)."""

from __future__ import annotations

from nats.aio.client import Client
from nats.errors import FlushTimeoutError

DRAIN_S = 3.0  # a live server answers in milliseconds; one that has not by then hangs


async def drain_within(nc: Client, seconds: float = DRAIN_S) -> bool:
    """Drain `nc` (what it holds is sent and the server confirms it) once the server answers a PING within `seconds`;
    else close it without waiting: False. A drain that fails closes `nc` too (as before: what was sent is sent)."""
    try:
        await nc.flush(seconds)
    except FlushTimeoutError:
        await nc.close()
        return False
    except Exception:  # noqa: BLE001 - the connection lost meanwhile: closing anyway
        await nc.close()
        return True
    try:
        await nc.drain()
    except Exception:  # noqa: BLE001 - closing anyway
        await nc.close()
    return True
