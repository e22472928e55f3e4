"""Bus's streams and KV buckets: created or updated idempotently at start, and pipelined KV writes and
reads (a mixin of :class:`podtax.bus.Bus`, which owns the connection and its JetStream context `js`)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, StorageType, StreamConfig
from nats.js.errors import (
    APIError,
    BadRequestError,
    KeyNotFoundError,
    NoKeysError,
    NotFoundError,
    ServiceUnavailableError,
)
from nats.js.kv import KeyValue

from podtax import kvscan, subjects
from podtax.buspipeline import gone, pipelined
from podtax.natsagain import Stopped, again_if_reconnected  # Stopped: raised here too

log = logging.getLogger("podtax.bus")
DUPLICATE_WINDOW_S = 120.0  # JetStream drops a message whose Nats-Msg-Id it stored this recently
OWNER_POLL_S = 0.5  # how often a service waiting for a stream's owner looks again
# What a request the server refuses (a permission) ends in: no answer
DENIED = (NatsTimeout, TimeoutError, NoRespondersError)
NO_ROOM = 10047  # JetStream's "insufficient storage resources": a file stream's max bytes do not fit its disk
# JetStream's "no suitable peers for placement": fewer servers ready than the replicas asked (a cluster still forming, a
# server down or restarting); tried again for up to PLACEMENT_WAIT_S
NO_PEERS = 10005
PLACEMENT_WAIT_S = 30.0


def replicas() -> int:
    """PODTAX_NATS_REPLICAS: copies of each stream and KV bucket (3 on a three-server JetStream cluster)."""
    from podtax.config import Common, load

    return load(Common).nats_replicas


def inbox_problem(refusal: str) -> str:
    """What the server's refusal of a connection's reply inbox means: its NATS permissions and this service are
    of different podtax versions (each role has an inbox prefix of its own, `_INBOX_<role>`; before, all `_INBOX`)."""
    return (f"NATS refused this connection's reply inbox ({refusal}): the NATS permissions (nats-auth.conf) and this "
            "service are of different podtax versions, so no JetStream request can be answered; move them "
            "together: apply the nats-auth.conf of this version (deploy/k8s: regenerate it; `podtax up`: restart it) "
            "and upgrade every service, each node's host agent included (deploy/k8s/README.md, Upgrading)")


class Streams:
    nc: Client
    js: JetStreamContext
    role: str | None
    inbox_refused: str

    async def ensure_streams(self, max_bytes: int | None = None, max_age_s: float | None = None,
                             wait: bool = False, stop: asyncio.Event | None = None,
                             max_msgs_per_subject: int | None = None) -> None:
        """Create podtax's streams with these limits (PODTAX_NATS_STREAM_MAX_BYTES/_AGE_S/_MSGS_PER_SUBJECT; the
        defaults without), or check the ones there. With NATS users only their owner may create them
        (natsauth.CREATORS), and nobody may change them: a service (`wait`) waits for the owner's (raising Stopped
        once `stop` is set), a command raises BusError naming it.
        A full events stream, or one of its subjects at its own limit, refuses new events (the publisher sees why:
        bus.refusal_text); dead letters drop their oldest."""
        from podtax.config import Common

        given = max_bytes is not None or max_age_s is not None or max_msgs_per_subject is not None
        defaults = Common.model_fields
        if max_bytes is None and max_age_s is None:
            max_bytes = defaults["nats_stream_max_bytes"].default
            max_age_s = defaults["nats_stream_max_age_s"].default
        if max_msgs_per_subject is None:
            max_msgs_per_subject = defaults["nats_stream_max_msgs_per_subject"].default
        for name, subj, desc, discard in (
            (subjects.STREAM, subjects.STREAM_SUBJECTS, "podtax events", DiscardPolicy.NEW),
            (subjects.DLQ_STREAM, subjects.DLQ_SUBJECTS, "podtax dead letters: messages that can never succeed",
             DiscardPolicy.OLD),
        ):
            config = StreamConfig(name=name, subjects=list(subj), description=desc, num_replicas=replicas(),
                                  storage=StorageType.FILE, duplicate_window=DUPLICATE_WINDOW_S, discard=discard,
                                  max_bytes=-1 if max_bytes is None else max_bytes, max_age=max_age_s or 0,
                                  **events_per_subject(name, max_msgs_per_subject))
            have = await self._stream_config(name)
            if have is None:
                try:
                    if self._may_create(name):
                        await self._create(functools.partial(self.js.add_stream, config), f"stream {name}", stop)
                        await self._led(name, f"stream {name}", stop)
                        continue
                except BadRequestError as exc:  # made meanwhile by another service (then read), or refused
                    await self._made_meanwhile(name, exc)
                except DENIED:  # not this user's to make
                    pass
                except APIError as exc:  # a traceback, and every service waiting for the stream (audit)
                    if exc.err_code != NO_ROOM:
                        raise
                    from podtax.bus import BusError

                    raise BusError(f"stream {name}: the NATS server has no room for its size limit of {max_bytes:,} "
                                   "bytes (JetStream reserves a stream's limit on its disk): free space where "
                                   "nats-server keeps JetStream, or lower PODTAX_NATS_STREAM_MAX_BYTES") from None
                await self._owners(name, wait, stop)
                have = await self._stream_config(name)
            if have is not None and (foreign := _foreign(have)):
                from podtax.bus import BusError

                raise BusError(f"stream {name} {foreign}: podtax never sets that, and the server would publish it "
                               f"past every permission; remove it (`nats stream edit {name}`, as a NATS admin)")
            if given and have is not None and (differ := _differences(have, config)):
                log.warning("stream %s differs from what this podtax version sets: %s; podtax changes no stream "
                            "(NATS permissions): change it as a NATS admin (`nats stream edit %s`; under `podtax "
                            "up`, see the README's NATS section)", name, "; ".join(differ), name)

    async def _stream_config(self, name: str) -> StreamConfig | None:
        try:
            return (await self.js.stream_info(name)).config
        except NotFoundError:
            return None
        except DENIED:
            self._inbox_refused()
            raise

    async def _create(self, make: Callable[[], Awaitable[Any]], what: str, stop: asyncio.Event | None) -> Any:
        """`make()`, a stream's or bucket's create. While the NATS cluster has fewer JetStream servers ready than its
        replicas (NO_PEERS: a cluster still forming, a server restarting) it is tried again, for up to
        PLACEMENT_WAIT_S, then a BusError names PODTAX_NATS_REPLICAS. Before, that refusal was taken for 'made
        meanwhile by another service', then said 'this NATS user may not create it', and a creator waiting for its own
        stream waited forever (a fault drill under load: a three-server cluster whose third was not yet counted)."""
        deadline = time.monotonic() + PLACEMENT_WAIT_S
        warned = False
        while True:
            try:
                return await make()
            except BadRequestError as exc:
                if exc.err_code != NO_PEERS:
                    raise
                if time.monotonic() >= deadline:
                    from podtax.bus import BusError

                    raise BusError(f"{what}: the NATS cluster has fewer JetStream servers ready than its "
                                   f"{replicas()} replicas (PODTAX_NATS_REPLICAS) after {PLACEMENT_WAIT_S:.0f} s "
                                   f"(NATS: {exc.description}): start the missing nats-servers, or lower "
                                   "PODTAX_NATS_REPLICAS") from None
                if not warned:
                    log.warning("%s: the NATS cluster has fewer JetStream servers ready than its %d replicas (NATS: "
                                "%s); trying again for up to %.0f s", what, replicas(), exc.description,
                                PLACEMENT_WAIT_S)
                    warned = True
            await _pause(stop or asyncio.Event(), f"creating {what}")

    async def _led(self, stream: str, what: str, stop: asyncio.Event | None) -> None:
        """Return once a replicated stream just made has a leader, for up to PLACEMENT_WAIT_S: until its servers
        elect one, a new R3 stream answers publishes 'no response from stream' (a fault drill under load: the first
        puts into the runner's bucket, made a moment before, failed). One server: at once."""
        if replicas() < 2:
            return
        deadline = time.monotonic() + PLACEMENT_WAIT_S
        while time.monotonic() < deadline:
            with contextlib.suppress(NoRespondersError, NatsTimeout, NotFoundError, ServiceUnavailableError):
                info = await self.js.stream_info(stream)  # answered by the stream's leader
                if info.cluster is None or info.cluster.leader:
                    return
            await _pause(stop or asyncio.Event(), f"waiting for {what}'s leader")
        log.warning("%s has no leader after %.0f s; its first writes may be refused", what, PLACEMENT_WAIT_S)

    async def _made_meanwhile(self, stream: str, exc: BadRequestError) -> None:
        """A create refused as a bad request: another service made it meanwhile (it exists now: fine), else the
        server's words in a BusError (they were taken for 'this NATS user may not create it')."""
        if await self._stream_config(stream) is None:
            from podtax.bus import BusError

            what = f"KV bucket {stream[3:]}" if stream.startswith("KV_") else f"stream {stream}"
            raise BusError(f"{what}: NATS refused to create it: {exc.description} (JetStream error {exc.err_code})")

    def _inbox_refused(self) -> None:
        """Raise BusError naming why requests get no answer when the server refused this connection's inbox."""
        if self.inbox_refused:
            from podtax.bus import BusError

            raise BusError(inbox_problem(self.inbox_refused)) from None

    def _may_create(self, stream: str) -> bool:
        """Whether this connection's NATS user may create the stream: its owner's (natsauth.CREATORS), or one
        that is no podtax role (no permissions, or the operator's own: it tries)."""
        from podtax.natsauth import CREATORS

        return self.role is None or CREATORS.get(stream) == self.role

    async def _owners(self, stream: str, wait: bool, stop: asyncio.Event | None = None) -> None:
        """Return once the stream exists, made by its owner (natsauth.CREATORS): this NATS user may not.
        Raises Stopped when `stop` is set meanwhile (a SIGTERM must not need a SIGKILL)."""
        from podtax.bus import BusError
        from podtax.natsauth import CREATORS

        if await self._stream_config(stream) is not None:
            return
        owner = CREATORS.get(stream, "runner")
        what = f"KV bucket {stream[3:]}" if stream.startswith("KV_") else f"stream {stream}"
        why = f"{what} does not exist yet, and this NATS user may not create it (podtax-{owner} does)"
        if not wait:
            raise BusError(f"{why}: start podtax-{owner} first")
        log.warning("%s: waiting until it does", why)
        stop = stop or asyncio.Event()
        while await self._stream_config(stream) is None:
            await _pause(stop, f"waiting for {what}")

    async def kv(self, bucket: str, history: int = 1, wait: bool = False,
                 stop: asyncio.Event | None = None) -> KeyValue:
        """The KV bucket, created when missing; one this NATS user may not create: see ensure_streams."""
        try:  # looked up again when the lookup went to a server that died (NATS restarted)
            return await again_if_reconnected(self.nc, lambda: self.js.key_value(bucket))
        except (NotFoundError, BadRequestError):
            pass
        except DENIED:  # a command's first request may be this one
            self._inbox_refused()
            raise
        try:
            if self._may_create(f"KV_{bucket}"):
                make = functools.partial(self.js.create_key_value, bucket=bucket, history=history, replicas=replicas())
                made = await self._create(make, f"KV bucket {bucket}", stop)
                await self._led(f"KV_{bucket}", f"KV bucket {bucket}", stop)
                return made
        except BadRequestError as exc:  # made meanwhile by another service (then read), or refused
            await self._made_meanwhile(f"KV_{bucket}", exc)
        except DENIED:  # not this user's to make
            pass
        await self._owners(f"KV_{bucket}", wait, stop)
        return await self.js.key_value(bucket)

    async def kv_put_many(self, bucket: str, items: Sequence[tuple[str, bytes]], timeout: float = 30.0) -> None:
        """Put many (key, value) pairs in a bucket, pipelined; returns when every one is stored.

        `KeyValue.put` is a JetStream publish on the subject `$KV.<bucket>.<key>`, one round trip at
        a time; this is the same publish with every put in flight at once. As Bus.publish_many: a server that
        dies (or hangs) with puts in flight never acks them, and nats-py would wait for ever (the analyzer's
        scores stopped being published so): past `timeout` seconds the rest are cancelled and Unacked is raised.
        Puts answered 'no response from stream' while the bucket's stream has no leader are made again (Pipeline.acks);
        into a bucket that is not there, that answer is raised."""
        def unacked(acked: int) -> str:
            return (f"NATS acked {acked} of {len(items)} puts into KV bucket {bucket} within {timeout:g} s (the "
                    "server restarted or is overloaded, or the bucket's stream has no leader?)")

        async with pipelined(self.js, timeout, unacked) as pipe:
            for key, value in items:
                await pipe.publish(f"$KV.{bucket}.{key}", value)
            await pipe.acks(lambda _: gone(self.js.stream_info(f"KV_{bucket}")))  # is the bucket's stream not there?

    @staticmethod
    async def kv_keys(kv: KeyValue, prefix: str = "") -> list[str]:
        """Keys of a bucket that start with `prefix` (an empty list for none, where nats-py raises).

        A prefix ending in a dot is filtered by the server (nats-py's `keys(filters=)` lists every key
        first): the runner's bucket holds one key per run of every campaign, and `node.` is a handful."""
        if prefix.endswith("."):
            return [key for key, _ in await kvscan.entries(kv, f"{prefix}>", keys_only=True)]
        try:
            return [k for k in await kv.keys() if k.startswith(prefix)]
        except NoKeysError:
            return []

    @staticmethod
    async def kv_json(kv: KeyValue, key: str) -> Any | None:
        """The JSON document stored under `key`, or None when there is none."""
        try:
            entry = await kv.get(key)
        except KeyNotFoundError:
            return None
        return json.loads(entry.value) if entry.value else None

    @classmethod
    async def kv_json_all(cls, kv: KeyValue, prefix: str) -> list[Any]:
        """Every JSON document whose key starts with `prefix`."""
        docs = [await cls.kv_json(kv, key) for key in await cls.kv_keys(kv, prefix)]
        return [d for d in docs if d is not None]


async def _pause(stop: asyncio.Event, doing: str) -> None:
    """Wait OWNER_POLL_S before trying again; raise Stopped at once when `stop` is set meanwhile (a SIGTERM must not
    need a SIGKILL)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), OWNER_POLL_S)
    if stop.is_set():
        raise Stopped(f"stopped while {doing}")


def events_per_subject(stream: str, limit: int | None) -> dict[str, Any]:
    """The events stream's per-subject limit: each subject (one node's host facts, one node's run logs, ...) holds
    at most `limit` messages and refuses more (discard new per subject), so a node publishing without end fills its
    own subjects, not the stream shared by every node (whose size limit then refused every node's reports). A
    refusal, never a discard: no result is lost (its publisher holds it and says why). Dead letters: none (they drop
    their oldest)."""
    if stream != subjects.STREAM or limit is None or limit < 1:
        return {}
    return {"max_msgs_per_subject": limit, "discard_new_per_subject": True}


def _differences(have: StreamConfig, want: StreamConfig) -> list[str]:
    """How the stream's settings differ from what ensure_streams would set, one 'field X (this service: Y)' each
    (subjects too: an event family no stream takes is refused)."""
    fields = ("subjects", "max_bytes", "max_age", "max_msgs_per_subject", "discard_new_per_subject", "num_replicas",
              "discard", "duplicate_window", "description")
    out = []
    for f in fields:
        had, wanted = getattr(have, f), getattr(want, f)
        if f == "subjects":
            had, wanted = sorted(had or []), sorted(wanted or [])
        if had != wanted:
            out.append(f"{f} {had} (this service: {wanted})")
    return out


def _foreign(have: StreamConfig) -> str:
    """What a stream has that podtax never sets and the server acts on for it (a republish, a source, a
    mirror): it would publish past every subject permission. Empty when nothing."""
    parts = [f"republishes {have.republish.src} to {have.republish.dest}" if have.republish else "",
             f"sources {', '.join(s.name for s in have.sources)}" if have.sources else "",
             f"mirrors {have.mirror.name}" if have.mirror else ""]
    return "; ".join(p for p in parts if p)
