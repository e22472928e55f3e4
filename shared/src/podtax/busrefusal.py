"""What JetStream's refusal of a publish means, and what to do (Bus.publish, the runner's outbox, the host agent):
the codes of its refusals for want of room, and the words naming the fix."""

from __future__ import annotations

from nats.js.errors import APIError

from podtax.busstreams import NO_ROOM

# JetStream's "store failed" (JSStreamStoreFailedF, its description the store's error: nats-server stream.go): a stream
# at a limit refuses new messages (discard new): "maximum bytes exceeded" (its size limit), "maximum messages per
# subject exceeded" (one subject's own limit: events.per_subject), "maximum messages exceeded". Its other answers are
# no want of room: STORE_CLOSED, TOO_LARGE (for_want_of_room)
FULL = 10077
# FULL's "store is closed" (ErrStoreClosed): the stream's store closed under the publish, the stream being stopped
# (deleted, updated, its server shutting down): over by itself (the stream answers again, or is gone: a publish no
# stream answers), NATS away; not reproduced here (review of 718fbf19 took it for a full stream)
STORE_CLOSED = "store is closed"
# FULL's "message too large" (ErrMsgTooLarge): one message above what a file stream stores in one message
# (filestore.go rlBadThresh, 32 MiB), reached only under a max_payload above it; no setting raises it: a refusal
TOO_LARGE = "message too large"
FILE_STORE_MAX_BYTES = 32 << 20
# JetStream's refusals for want of room, which last until an admin makes room (not an outage): FULL, "insufficient
# resources" (10023, a 503: the server's JetStream storage, max_file_store or the disk, used up), "insufficient storage
# resources available" (busstreams.NO_ROOM), "resource limits exceeded for account" (10002). Any other error of a
# publish (a 503 "JetStream system temporarily unavailable" during a leader change, ...) is NATS away: sent again, not
# a refusal
RESOURCES = frozenset({10023, NO_ROOM, 10002})
LIMITS = frozenset({FULL, *RESOURCES})
TOO_BIG = 10054  # JetStream's "message size exceeds maximum allowed": the event above its stream's max_msg_size
SEALED = 10109  # JetStream's "invalid operation on sealed stream": a sealed stream takes nothing more, for ever


def too_large(exc: BaseException) -> bool:
    """Whether `exc` is JetStream's TOO_LARGE: a message above FILE_STORE_MAX_BYTES, which nothing raises; raw, or as
    Bus's Unacked (its err_code and description)."""
    return getattr(exc, "err_code", None) == FULL and getattr(exc, "description", None) == TOO_LARGE


def lasting(exc: BaseException) -> bool:
    """Whether `exc` is JetStream refusing a publish, for another reason than want of room, until an admin acts: the
    event above its stream's max_msg_size (TOO_BIG) or above what a file stream stores (TOO_LARGE), the stream
    sealed (SEALED); raw, or as Bus's Unacked (its err_code and description)."""
    return getattr(exc, "err_code", None) in (TOO_BIG, SEALED) or too_large(exc)


def lasting_text(exc: BaseException, size: int | None, stream: str) -> str | None:
    """Why JetStream refuses, until an admin acts, a publish of `size` bytes (with its headers) to `stream`, and the
    fix, when `exc` is such a refusal but no want of room (lasting(): the runner's outbox, the host agent); else
    None. `size` None: not known (an event of several)."""
    it = "an event is" if size is None else f"it is {size:,} bytes with its NATS headers,"
    if too_large(exc):
        return (f"{it} above the {FILE_STORE_MAX_BYTES >> 20} MiB JetStream "
                f"stores in one message of a file stream ({TOO_LARGE}, JetStream error {FULL}): no setting raises it, "
                "so NATS never takes " + ("it" if size is None else "this report: the run's test must print less "
                                          "(its parameters)"))
    if not isinstance(exc, APIError):
        return None
    if exc.err_code == TOO_BIG:
        return (f"{it} above the events stream {stream}'s max_msg_size ({exc.description}, JetStream error "
                f"{TOO_BIG}); raise that limit to {'its size' if size is None else f'{size:,}'} or more as a NATS "
                f"admin (`nats stream edit {stream} --max-msg-size <bytes>`, -1 for none: podtax sets none)")
    if exc.err_code == SEALED:
        return (f"the events stream {stream} is sealed ({exc.description}, JetStream error {SEALED}): it takes "
                "nothing more, and cannot be unsealed; a NATS admin replaces it (delete it, then restart the runner, "
                "which makes it as it starts)")
    return None


def for_want_of_room(exc: BaseException) -> bool:
    """Whether JetStream's refusal `exc` (raw, or as Bus's Unacked) is for want of room (LIMITS), to be said with
    refusal_text's fix: FULL only with a limit's words ('maximum ...'), not STORE_CLOSED (NATS away) nor TOO_LARGE (a
    refusal of its own)."""
    code = getattr(exc, "err_code", None)
    if code == FULL:
        return (getattr(exc, "description", None) or "").startswith("maximum ")
    return code in RESOURCES


def refusal_text(exc: APIError | None, subject: str | None = None) -> str:
    """What JetStream's refusal of published events means, and what to do: the events stream at its size limit, or
    one subject (`subject`, when known: a single publish) at its own limit of messages."""
    if exc is not None and exc.err_code in RESOURCES:
        return (f"JetStream refused the events: the server has no room left ({exc.description}, JetStream error "
                f"{exc.err_code}): its JetStream storage (max_file_store, or the disk under its store_dir) or the "
                "account's limit is used up; free disk space or raise that limit in the NATS server's configuration "
                "(a stream without a size limit, PODTAX_NATS_STREAM_MAX_BYTES=-1, grows until then)")
    if exc is not None and (text := lasting_text(exc, None, "PODTAX")) is not None:
        return f"JetStream refused the events: {text}"
    if exc is None or not for_want_of_room(exc):
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
