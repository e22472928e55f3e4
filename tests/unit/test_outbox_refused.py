"""What the runner takes for NATS refusing its events (said as a limit to raise, written in the campaign's state)
and what for NATS away: an Unacked of publish_many whose acks did not come in time is NATS away, not a refusal."""

from __future__ import annotations

from nats.js.errors import APIError, ServiceUnavailableError
from podtax.bus import FULL, Unacked, refusal_text
from podtax_runner.outbox import refused


def test_a_full_stream_is_a_refusal_and_silence_is_not() -> None:
    full = APIError(code=400, err_code=FULL, description="maximum bytes exceeded")
    assert refused(full)
    assert refused(Unacked(refusal_text(full), full.err_code))
    assert not refused(Unacked("NATS acked 0 of 3 published events within 10 s (the server restarted or is "
                               "overloaded?)"))
    assert not refused(TimeoutError())


def test_only_a_want_of_room_is_a_refusal() -> None:
    """A 503 'JetStream system temporarily unavailable' (a leader change) is NATS away, sent again with a warning; the
    server's storage used up (10023 'insufficient resources', also a 503) is a refusal (review r3)."""
    unavailable = ServiceUnavailableError(code=503, err_code=10008, description="JetStream system temporarily "
                                          "unavailable")
    assert not refused(unavailable)
    assert not refused(Unacked(refusal_text(unavailable), unavailable.err_code))
    storage = ServiceUnavailableError(code=503, err_code=10023, description="insufficient resources")
    assert refused(storage)
    assert refused(Unacked(refusal_text(storage), storage.err_code))
    assert "no room left" in refusal_text(storage)
