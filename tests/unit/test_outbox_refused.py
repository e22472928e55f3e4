"""What the runner takes for NATS refusing its events (said as a limit to raise, written in the campaign's state)
and what for NATS away: an Unacked of publish_many whose acks did not come in time is NATS away, not a refusal."""

from __future__ import annotations

from nats.js.errors import APIError
from podtax.bus import FULL, Unacked, refusal_text
from podtax_runner.outbox import refused


def test_a_full_stream_is_a_refusal_and_silence_is_not() -> None:
    full = APIError(code=400, err_code=FULL, description="maximum bytes exceeded")
    assert refused(full)
    assert refused(Unacked(refusal_text(full)))
    assert not refused(Unacked("NATS acked 0 of 3 published events within 10 s (the server restarted or is "
                               "overloaded?)"))
    assert not refused(TimeoutError())
