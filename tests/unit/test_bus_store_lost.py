"""Publishing into a stream or KV bucket NATS does not have (it lost its JetStream store): one failure raised, and
no 'Future exception was never retrieved' logged per publish (review hR5: 19 for 20 events from publish_many)."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest
from nats.js.errors import NoStreamResponseError
from podtax.bus import Bus

from tests.integration.harness import host_facts


def _unretrieved(caplog: pytest.LogCaptureFixture) -> list[str]:
    gc.collect()  # a future's unretrieved failure is logged when it is collected
    return [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()]


def test_publish_many_without_the_stream_raises_once_and_leaves_no_unretrieved_failure(
        nats_url: str, caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        bus = await Bus.connect(nats_url, "tests")  # no ensure_streams: as after NATS lost its store
        try:
            with pytest.raises(Exception, match="no response from stream"):
                await bus.publish_many([host_facts(i) for i in range(20)], timeout=5)
        finally:
            await bus.close()

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(main())
        assert not _unretrieved(caplog)


def test_puts_into_a_missing_bucket_raise_once_and_leave_no_unretrieved_failure(
        nats_url: str, caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        bus = await Bus.connect(nats_url, "tests")
        try:
            with pytest.raises(Exception, match="no response from stream"):
                await bus.kv_put_many("nosuchbucket", [(f"k{i}", b"v") for i in range(20)])
        finally:
            await bus.close()

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(main())
        assert not _unretrieved(caplog)


def test_a_handler_failing_as_its_consumer_is_cancelled_leaves_no_unretrieved_failure(
        caplog: pytest.LogCaptureFixture) -> None:
    """The host agent's run handler publishing into the lost stream fails in the same loop turn as its consumer is
    cancelled (the service stopping: NATS lost); its failure was left unretrieved and asyncio logged it with a
    traceback after the service's one line (a CI run of test_nats_store_lost_midway)."""
    from podtax import busmessages

    async def main() -> None:
        work: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(busmessages.with_heartbeat([], work, 60))
        await asyncio.sleep(0)  # with_heartbeat now waits for the handler
        work.set_exception(RuntimeError("nats: no response from stream"))  # the handler fails...
        waiting.cancel()  # ...as the consumer is cancelled, before the wait hears of the failure
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert work.done() and not work.cancelled()

    with caplog.at_level(logging.INFO):
        asyncio.run(main())
        assert _unretrieved(caplog) == []


def test_publish_many_asks_for_the_stream_of_the_unanswered_publish_not_of_the_first_event(nats_url: str) -> None:
    """A batch whose first event's stream is there and whose later event has none (review r1 of 2b4236b): the lost
    store was looked for by the first event's subject, found, and the later event published again until the batch's
    deadline (Unacked, 'the stream has no leader?'); it is asked of the unanswered publish's own subject now."""
    async def main() -> None:
        bus = await Bus.connect(nats_url, "tests")
        first, later = host_facts(0), host_facts(1)
        try:
            await bus.js.add_stream(name="FIRSTONLY", subjects=[first.subject])  # no stream has the later's subject
            with pytest.raises(NoStreamResponseError):
                await bus.publish_many([first, later], timeout=30)
        finally:
            await bus.close()

    asyncio.run(main())


def test_unanswered_publishes_are_asked_after_once_per_stream() -> None:
    """A batch whose unanswered publishes span a stream between leaders (asked first: there) and a stream NATS lost
    (review r6, L4): only the first unanswered publish's subject was asked, so the lost one was published again until
    the batch's deadline (Unacked); each stream is asked now, once, and the lost one's answer raised."""
    from podtax import subjects
    from podtax.buspipeline import pipelined

    class NoStreams:
        """A JetStream whose every publish is answered 'no response from stream'."""

        async def publish_async(self, subject: str, payload: bytes, headers: object = None) -> asyncio.Future[object]:
            fut: asyncio.Future[object] = asyncio.get_running_loop().create_future()
            fut.set_exception(NoStreamResponseError())
            return fut

    lost_streams = {subjects.DLQ_STREAM}
    asked: list[str] = []

    async def lost(subject: str) -> bool:
        asked.append(subject)
        return subjects.stream_of(subject) in lost_streams

    async def main() -> None:
        async with pipelined(NoStreams(), 5.0, lambda acked: f"acked {acked}") as pipe:  # type: ignore[arg-type]
            for subject in ("podtax.run.log", "podtax.run.failed", "podtaxdlq.run.log", "podtaxdlq.run.failed"):
                await pipe.publish(subject, b"{}")
            await pipe.acks(lost)

    with pytest.raises(NoStreamResponseError):
        asyncio.run(main())
    assert asked == ["podtax.run.log", "podtaxdlq.run.log"], asked
