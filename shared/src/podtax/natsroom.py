"""Whether the NATS server takes writes: a small key of the runner's bucket written, which JetStream refuses for want
of room when its storage is used up (10023 'insufficient resources': max_file_store or the disk under its store_dir,
reached by a stream without a size limit), or the account's limit is (10002, 10047: bus.RESOURCES).

The runner looks so before a run expires (podtax_runner.fullness) and writes why in the campaign's state, which
`podtax campaign status` prints as its `stalled:` line. But that state is in the same store: with the storage used up
its write is refused too, and the status said nothing of why the campaign stalled. So `campaign status` looks itself
(:func:`refusal`) while the campaign runs, and says it."""

from __future__ import annotations

import asyncio
import time

from nats.js.kv import KeyValue

PROBE_KEY = "room-probe"  # written in the runner's bucket to learn whether the server has storage left
ANSWER_S = 1.0  # how long a look waits for an answer


async def refused(kv: KeyValue, timeout: float = ANSWER_S) -> Exception | None:
    """NATS's refusal of a write of PROBE_KEY in `kv` for want of room (bus.RESOURCES: the server's storage or the
    account's limit), None when it took it; other errors (no answer) are raised. The runner's fullness and `campaign
    status` look so alike (one key, one set of codes). A refusal by the bucket's own limit (bus.FULL, 'maximum ...
    exceeded': a limit an admin set on the bucket) says the server has storage: it is no want of room for reports,
    which go to the events stream (before, the runner's look counted it as the server's storage used up)."""
    from podtax.bus import FULL, RESOURCES

    try:
        await asyncio.wait_for(kv.put(PROBE_KEY, str(time.time()).encode()), timeout)
    except Exception as exc:
        code = getattr(exc, "err_code", None)
        if code == FULL:
            return None
        if code not in RESOURCES:
            raise
        return exc
    return None


async def refusal(kv: KeyValue, timeout: float = ANSWER_S) -> str:
    """Why NATS refuses a write for want of room ('' when it took it); other errors (no answer) are raised."""
    exc = await refused(kv, timeout)
    if exc is None:
        return ""
    return (f"NATS refuses writes for want of room ({getattr(exc, 'description', None) or exc}, JetStream error "
            f"{getattr(exc, 'err_code', None)}): its JetStream storage (max_file_store, or the disk under its "
            "store_dir) or the account's limit is used up, so the runs' reports and the runner's state wait (this "
            "campaign's state may be older than it looks); free disk space or raise that limit in the NATS server's "
            "configuration (a stream without a size limit, PODTAX_NATS_STREAM_MAX_BYTES=-1, grows until then)")
