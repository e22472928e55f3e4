"""Pipelined JetStream publishes under one deadline: every publish in flight at once, then their acks.

A server that dies (or hangs) with publishes in flight never acks them, and nats-py would wait for those acks for
ever (and, once 4,000 are outstanding, block every later publish). :func:`pipelined` bounds a batch: past its
`timeout` the publishes not acked are cancelled (which frees their slots in nats-py) and the caller's Unacked is
raised with how many were acked; so it is when NATS is away and nats-py's outbound buffer (2 MB) is full
(OutboundBufferLimitError: before, a 20,000-run campaign's save raised it, and the runner exited 1). Once the
service is told to stop (natsagain.watch_stop), the batch has natsagain.STOP_GRACE_S more at most, then
natsagain.Stopped is raised (before, a SIGTERM with NATS dead or hung waited out the 30 s deadline: Kubernetes'
whole grace). Bus.publish_many (events) and Streams.kv_put_many (KV puts)
both publish so.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from nats.errors import NoRespondersError, OutboundBufferLimitError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.errors import NoStreamResponseError, NotFoundError, ServiceUnavailableError, TooManyStalledMsgsError

from podtax.natsagain import Stopped, stop_event, stop_grace_over
from podtax.subjects import stream_of

# Between the rounds of publishes answered 'no response from stream' while their stream is between leaders (the
# pause nats.go's JetStream publish takes before trying such a publish again)
LEADERLESS_PAUSE_S = 0.25


class Pipeline:
    """The publishes of one batch: `futures` holds one ack future per publish, in order."""

    def __init__(self, js: JetStreamContext, bound: asyncio.Timeout) -> None:
        self.js, self.bound = js, bound
        self.futures: list[asyncio.Future[Any]] = []
        self.sent: list[tuple[str, bytes, dict[str, str] | None]] = []

    async def publish(self, subject: str, payload: bytes, headers: dict[str, str] | None = None) -> None:
        """Publish without waiting for its ack; raise once the batch's deadline has passed (check_bound)."""
        self.futures.append(await self.js.publish_async(subject, payload, headers=headers))
        self.sent.append((subject, payload, headers))
        check_bound(self.bound)

    async def acks(self, lost: Callable[[str], Awaitable[bool]],
                   wait: Callable[[asyncio.Future[Any]], Awaitable[Any]] | None = None) -> None:
        """Wait for every ack of the batch, in order (each through `wait`, when given: Bus.publish_many's also ends at
        a refusal). Publishes answered 'no response from stream' (nothing listened on their subject) while
        `lost(subject)`, asked of the first such publish's subject of each stream among them (subjects.stream_of; of
        the first unanswered publish only before, review r6: a batch spanning a stream between leaders, asked first,
        and one lost was published again until its deadline), says False (the stream is there: between leaders,
        e.g. just made, its leader stepping down, a server restarting) are published again after LEADERLESS_PAUSE_S,
        until the batch's deadline: none of them was stored, so none can be stored twice. When it says True (no such
        stream: NATS lost its store) the first of them is raised. Before, one leaderless moment failed a whole batch
        (a CI run)."""
        todo = range(len(self.futures))
        while todo:
            again: list[int] = []
            unanswered: NoStreamResponseError | None = None
            for i in todo:
                try:
                    await (wait(self.futures[i]) if wait is not None else self.futures[i])
                except NoStreamResponseError as exc:
                    again.append(i)
                    unanswered = unanswered or exc
            if unanswered is not None:
                first: dict[str, str] = {}  # a subject of each stream, in the order of the batch
                for i in again:
                    first.setdefault(stream_of(self.sent[i][0]), self.sent[i][0])
                for subject in first.values():
                    if await lost(subject):
                        raise unanswered
            if again:
                await asyncio.sleep(LEADERLESS_PAUSE_S)
            for i in again:
                self.futures[i] = await self.js.publish_async(*self.sent[i][:2], headers=self.sent[i][2])
                check_bound(self.bound)
            todo = again

    def acked(self) -> int:
        """How many publishes JetStream has answered so far."""
        return sum(1 for f in self.futures if f.done() and not f.cancelled())


@contextlib.asynccontextmanager
async def pipelined(js: JetStreamContext, timeout: float, unacked: Callable[[int], str]) -> AsyncIterator[Pipeline]:
    """A :class:`Pipeline` whose publishes and acks, awaited within the block, must all be in within `timeout`
    seconds; else podtax.bus.Unacked(unacked(number acked)). Once the service's stop event is set (natsagain), within
    STOP_GRACE_S more (a live server's acks still come): else natsagain.Stopped, whose caller leaves what it
    handles unacked (delivered again; the publishes are de-duplicated by their Nats-Msg-Id). On leaving, whatever
    way, the futures not done are cancelled and the failures of those done retrieved (settle)."""
    from podtax.bus import Unacked  # podtax.bus imports this module

    pipe: Pipeline | None = None
    stop = stop_event()
    shortening: asyncio.Future[None] | None = None
    try:
        async with asyncio.timeout(timeout) as bound:  # one deadline for the batch: a timer per publish doubled
            pipe = Pipeline(js, bound)  # its CPU
            if stop is not None:
                shortening = asyncio.ensure_future(_shorten_on_stop(stop, bound))
            yield pipe
    except (TimeoutError, TooManyStalledMsgsError, OutboundBufferLimitError) as exc:
        stalled_or_cancelled(exc)
        # OutboundBufferLimitError: NATS away and nats-py's buffer for it (2 MB) full: as a disconnect, the batch is
        # held and retried, what it handles left unacked
        away = isinstance(exc, OutboundBufferLimitError)
        if stop is not None and stop.is_set():
            raise Stopped("stopped while NATS was away" if away else "stopped while waiting for NATS") from None
        acked = pipe.acked() if pipe else 0
        raise Unacked(f"NATS away: the connection is lost and nats-py's outbound buffer is full ({acked} acked of the "
                      "batch)" if away else unacked(acked)) from None
    finally:
        if shortening is not None:
            shortening.cancel()
        if pipe is not None:
            settle(pipe.futures)


async def _shorten_on_stop(stop: asyncio.Event, bound: asyncio.Timeout) -> None:
    """Once `stop` is set, end the batch STOP_GRACE_S after (natsagain.stop_grace_over) unless its deadline came
    first."""
    await stop_grace_over(stop)
    if not bound.expired():
        bound.reschedule(asyncio.get_running_loop().time())


async def gone(ask: Awaitable[Any]) -> bool:
    """Whether the stream a publish got 'no response from stream' from is not there (NATS lost its store), by `ask`
    (a request naming it: stream info, or the stream of a subject): NotFound says so; no answer (no leader, nor meta
    leader, to give one) is a stream between leaders, whose publishes are made again (Pipeline.acks)."""
    try:
        await ask
    except NotFoundError:
        return True
    except (NoRespondersError, NatsTimeout, ServiceUnavailableError):
        pass
    return False


def check_bound(bound: asyncio.Timeout) -> None:
    """After each publish of a batch: raise TimeoutError once the batch's deadline has passed, CancelledError once the
    caller was cancelled. nats-py swallows a cancellation that finds it flushing a full buffer (more than 2 MB held
    for a server that stopped reading, e.g. hung), so the deadline's own cancellation may never arrive."""
    if bound.expired():
        raise TimeoutError
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def stalled_or_cancelled(exc: BaseException) -> None:
    """Raise CancelledError when `exc` is nats-py's TooManyStalledMsgsError standing for the caller's own cancellation:
    nats-py turns a cancellation that finds it waiting for room (20,000 publishes in flight) into that error, which a
    deadline (asyncio.timeout) then lets through as it is, and a task cancelled from outside would not end as one."""
    task = asyncio.current_task()
    if isinstance(exc, TooManyStalledMsgsError) and task is not None and task.cancelling():
        raise asyncio.CancelledError from None


def settle(futures: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel the futures not done and retrieve the failures of those done: one failure raised by their caller, not
    one 'Future exception was never retrieved' logged per publish (a lost stream or bucket)."""
    for fut in futures:
        if not fut.done():
            fut.cancel()
        elif not fut.cancelled():
            fut.exception()
