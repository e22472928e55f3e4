"""What the runner takes for NATS refusing its events (said as a limit to raise, written in the campaign's state)
and what for NATS away: an Unacked of publish_many whose acks did not come in time is NATS away, not a refusal."""

from __future__ import annotations

from nats.js.errors import APIError, ServiceUnavailableError
from podtax.bus import FULL, Unacked, at_limit, refusal_text
from podtax_runner.outbox import refused


def test_a_full_stream_is_a_refusal_and_silence_is_not() -> None:
    full = APIError(code=400, err_code=FULL, description="maximum bytes exceeded")
    assert refused(full)
    assert refused(Unacked(refusal_text(full), full.err_code, full.description))
    assert not refused(Unacked("NATS acked 0 of 3 published events within 10 s (the server restarted or is "
                               "overloaded?)"))
    assert not refused(TimeoutError())


def test_only_a_want_of_room_is_a_refusal() -> None:
    """A 503 'JetStream system temporarily unavailable' (a leader change) is NATS away, sent again with a warning; the
    server's storage used up (10023 'insufficient resources', also a 503) is a refusal (review r3)."""
    unavailable = ServiceUnavailableError(code=503, err_code=10008, description="JetStream system temporarily "
                                          "unavailable")
    assert not refused(unavailable)
    assert not refused(Unacked(refusal_text(unavailable), unavailable.err_code, unavailable.description))
    storage = ServiceUnavailableError(code=503, err_code=10023, description="insufficient resources")
    assert refused(storage)
    assert refused(Unacked(refusal_text(storage), storage.err_code, storage.description))
    assert "no room left" in refusal_text(storage)


def test_a_store_closed_is_nats_away_and_a_message_too_large_no_full_stream() -> None:
    """10077 is JetStream's 'store failed', its description the store's error (nats-server stream.go): 'store is
    closed' (the stream being stopped: over by itself) is NATS away, not a full stream; 'message too large' (above the
    32 MiB a file stream stores in one message) is a refusal no limit raises. Before, both were said as a full stream
    ('raise its size limit ... --max-bytes'), the runner keeping the report as refused. 'store is closed' was not
    produced by a real nats-server here (a stream deleted under 30 x 1,500 publishes: 'no response from stream')."""
    closed = ServiceUnavailableError(code=503, err_code=FULL, description="store is closed")
    assert not refused(closed) and not at_limit(closed)
    assert not refused(Unacked(refusal_text(closed), None))
    assert "full" not in refusal_text(closed)
    large = ServiceUnavailableError(code=503, err_code=FULL, description="message too large")
    assert refused(large) and not at_limit(large)
    assert "32 MiB" in refusal_text(large) and "max-bytes" not in refusal_text(large)
