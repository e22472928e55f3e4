"""Read every entry of a JetStream KV bucket that matches a pattern, in one server-filtered pass.

nats-py's `KeyValue.watch()` signals "initial values done" with a None entry, but it decides that
from the consumer's `num_pending` against the messages its callback has *processed*: when the
server has already pushed every message and the callback has not run yet, the None comes first
and a reader stops with nothing (seen under load: a restarted runner resumed a campaign with no
runs). So the end is decided here from the messages themselves: each carries how many were still
pending when it was delivered, and the last of the initial ones says 0. An empty match is
confirmed from the stream's own per-subject state before trusting the early marker.
"""

from __future__ import annotations

from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

DELETES = {"DEL", "PURGE"}


async def _empty(kv: KeyValue, pattern: str) -> bool:
    """No message of the bucket's stream is on a subject matching `pattern`."""
    js: JetStreamContext = kv._js  # noqa: SLF001 - the KV's own JetStream context
    info = await js.stream_info(kv._stream, subjects_filter=f"{kv._pre}{pattern}")  # noqa: SLF001
    return not info.state.subjects


async def entries(kv: KeyValue, pattern: str, timeout: float = 30.0,
                  keys_only: bool = False) -> list[tuple[str, bytes]]:
    """(key, value) of the newest revision of every live key matching `pattern` (`>` and `*` as in
    NATS subjects). Raises TimeoutError when the server sends nothing for `timeout` seconds."""
    watcher = await kv.watch(pattern, ignore_deletes=False, meta_only=keys_only)
    found: dict[str, bytes] = {}
    try:
        while True:
            try:
                entry = await watcher.updates(timeout=timeout)
            except NatsTimeout:
                raise TimeoutError(f"reading {pattern} from KV {kv._name} stalled for {timeout:g} s") from None  # noqa: SLF001
            if entry is None:  # nats-py's marker: true only when nothing matches at all
                if not found and await _empty(kv, pattern):
                    return []
                continue
            if entry.operation in DELETES:
                found.pop(entry.key, None)
            else:
                found[entry.key] = entry.value or b""
            if entry.delta == 0:  # the last message that was pending when the watch began
                return list(found.items())
    finally:
        await watcher.stop()
