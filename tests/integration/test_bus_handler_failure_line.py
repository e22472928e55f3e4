"""A handler failing on NATS's side (NATS away, a stream it lost: nats-py's error or podtax's NatsLost) is one line, its
type and message, then retried as any failure (review hR5 F1: the host agent logged nats-py's whole traceback before
its 'NATS lost' line); any other failure keeps its traceback, a bug to find, nats-py's errors that point at podtax too
(review hR8: a bad subject, a payload above max_payload, a stale revision, podtax's own oversized-event BusError)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from nats.errors import BadSubjectError, MaxPayloadError, NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import KeyWrongLastSequenceError, NoStreamResponseError, NotFoundError
from podtax.bus import Bus, BusError, ConsumerSpec, NatsLost
from podtax.events import Event

from tests.integration.harness import host_facts


@pytest.mark.parametrize("error,traceback", [
    (NoStreamResponseError(), False), (NoRespondersError(), False), (NatsTimeout(), False),
    (NotFoundError(code=404, description="stream not found"), False),
    (NatsLost("NATS lost JetStream consumer x"), False),
    (ValueError("a bug"), True), (BadSubjectError(), True), (MaxPayloadError(), True),
    (KeyWrongLastSequenceError(), True),
    (BusError("raw_log x is 2000000 bytes, above the server's max_payload of 1048576"), True)])
async def test_a_nats_side_handler_failure_is_one_line_any_other_its_traceback(
        nats_url: str, caplog: pytest.LogCaptureFixture, error: Exception, traceback: bool) -> None:
    b = await Bus.connect(nats_url, "tests/handler-failure")
    try:
        await b.ensure_streams()
        await b.publish(host_facts(1))
        stop = asyncio.Event()

        async def fails(event: Event) -> None:
            stop.set()
            raise error

        with caplog.at_level(logging.ERROR, logger="podtax.bus"):
            await asyncio.wait_for(b.consume(ConsumerSpec("fails", ["podtax.host.facts.>"]), fails, stop), 20)
        failed = [r for r in caplog.records if r.getMessage().startswith("handler failed for podtax.host.facts.n1")]
        assert len(failed) == 1, caplog.text
        assert (failed[0].exc_info is not None) == traceback, caplog.text
        assert f"{type(error).__name__}: {error}" in failed[0].getMessage() or traceback, caplog.text
    finally:
        await b.close()
