"""What JetStream's refusal of a publish means, and what to do (Bus.publish, the runner's outbox, the host agent):
the codes of its refusals for want of room, and the words naming the fix."""

from __future__ import annotations

from nats.js.errors import APIError

from podtax.busstreams import NO_ROOM

# JetStream's "store failed": a stream at a limit refuses new messages (discard new): "maximum bytes exceeded" (its size
# limit), "maximum messages per subject exceeded" (one subject's own limit: events.per_subject), "maximum messages
# exceeded"
FULL = 10077
# JetStream's refusals for want of room, which last until an admin makes room (not an outage): FULL, "insufficient
# resources" (10023, a 503: the server's JetStream storage, max_file_store or the disk, used up), "insufficient storage
# resources available" (busstreams.NO_ROOM), "resource limits exceeded for account" (10002). Any other error of a
# publish (a 503 "JetStream system temporarily unavailable" during a leader change, ...) is NATS away: sent again, not
# a refusal
RESOURCES = frozenset({10023, NO_ROOM, 10002})
LIMITS = frozenset({FULL, *RESOURCES})


def refusal_text(exc: APIError | None, subject: str | None = None) -> str:
    """What JetStream's refusal of published events means, and what to do: the events stream at its size limit, or
    one subject (`subject`, when known: a single publish) at its own limit of messages."""
    if exc is not None and exc.err_code in RESOURCES:
        return (f"JetStream refused the events: the server has no room left ({exc.description}, JetStream error "
                f"{exc.err_code}): its JetStream storage (max_file_store, or the disk under its store_dir) or the "
                "account's limit is used up; free disk space or raise that limit in the NATS server's configuration "
                "(a stream without a size limit, PODTAX_NATS_STREAM_MAX_BYTES=-1, grows until then)")
    if exc is None or exc.err_code != FULL:
        return f"JetStream refused the events ({exc.description if exc else 'no reason given'})"
    from podtax.config import Common

    fields = Common.model_fields
    age = "wait until old events age out (PODTAX_NATS_STREAM_MAX_AGE_S)"
    if "per subject" in (exc.description or ""):
        where = f"subject {subject}" if subject else "one subject"
        return (f"JetStream refused the events: {where} holds its limit of messages in stream PODTAX "
                f"({exc.description}); the other subjects (other nodes) still take theirs. A node publishing without "
                "end is stopped so (deploy/host/INSTALL.md: disable its user, purge its subjects); for a deployment "
                "that really publishes more, raise the limit as a NATS admin (`nats stream edit PODTAX "
                "--max-msgs-per-subject`; PODTAX_NATS_STREAM_MAX_MSGS_PER_SUBJECT, "
                f"{fields['nats_stream_max_msgs_per_subject'].default:,} by default, applies only when the stream is "
                f"created; under `podtax up`, see the README's NATS section) or {age}")
    if "maximum messages" in (exc.description or ""):  # a limit podtax never sets: an admin's (review rJ)
        return (f"JetStream refused the events: its stream holds its limit of messages ({exc.description}); raise "
                "it as a NATS admin (`nats stream edit PODTAX --max-msgs <count>`, -1 for none: podtax sets none) or "
                f"{age}")
    return (f"JetStream refused the events: its stream is full ({exc.description}); raise its size limit as a "
            "NATS admin (`nats stream edit PODTAX --max-bytes`; PODTAX_NATS_STREAM_MAX_BYTES, "
            f"{fields['nats_stream_max_bytes'].default:,} bytes by default, applies only when the "
            f"stream is created; under `podtax up`, see the README's NATS section) or {age}")
