"""Whether NATS has room for runs' reports, for the runner's expiry of runs that never reported.

A report NATS refuses for want of room (discard new) is kept by its publisher and sent again: a host agent keeps its
run's log on disk, the runner holds its own executors' (outbox.py), the parser holds its batch. A run expired
meanwhile as no-report was failed and run again, and its measured log, stored once there was room, was a second
result for one planned run. Room is wanting when:
- the events stream is at its size limit (or its message limit): looked at every PROBE_EVERY_S; no run expires then;
- one node's run subjects (its log, result or failure) hold their limit of messages (max_msgs_per_subject; JetStream
  error 10077 'maximum messages per subject exceeded'), or the server's JetStream storage is used up (10023
  'insufficient resources', with a stream of no size limit): looked at when a run is due to expire (its node's
  subjects, and a write of the runner's own bucket), at most every PROBE_EVERY_S; that run does not expire then.
Each run is given its grace again from the moment there is room. A look that gets no answer (NATS slow or away) holds
the runs due too (said in a warning, once a minute), for at most UNKNOWN_HOLD_S: then they expire as before.
Also kept here: NATS refusing the runner's own events (requests, simulated results, no-report failures), by the
campaign and node they were for, so that only those campaigns' state says so (Header.stalled)."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Iterable

from nats.js.kv import KeyValue
from podtax import events, natsroom, subjects
from podtax.bus import Bus
from podtax.busrefusal import lasting_text

log = logging.getLogger("podtax.runner")
PROBE_EVERY_S = 5.0  # how often the runner looks at the stream's size, and at most at a node's subjects
ANSWER_S = 1.0  # how long it waits for an answer
UNKNOWN_HOLD_S = 300.0  # runs due are held this long at most while the room cannot be looked at
SAID_EVERY_S = 60.0  # the same refusal or failed look is said this seldom
REPORTS = (subjects.RUN_LOG, subjects.RUN_RESULT, subjects.RUN_FAILED)  # where a run's report and outcome go
Where = tuple[str, str]  # (campaign, node)


def stream_full(config_max_bytes: int | None, used: int, config_max_msgs: int | None, messages: int,
                max_payload: int) -> str:
    """Why the events stream counts as full: within the larger of a message's size and 5 % of its limit (capped at
    `max_payload`) of its size limit, or at its message limit; '' when it has room."""
    limit = config_max_bytes or -1
    if 0 < limit < used + min(max_payload, max(1, limit // 20)):
        return (f"the events stream {subjects.STREAM} is full ({used:,} of its {limit:,} bytes): reports are refused, "
                "so no run expires as no-report until there is room (each then gets its grace again); raise its size "
                f"limit as a NATS admin (`nats stream edit {subjects.STREAM} --max-bytes`; "
                "PODTAX_NATS_STREAM_MAX_BYTES applies only when the stream is created) or wait until old events age "
                "out (PODTAX_NATS_STREAM_MAX_AGE_S)")
    if (config_max_msgs or -1) > 0 and messages >= (config_max_msgs or 0):
        return (f"the events stream {subjects.STREAM} holds its limit of {config_max_msgs:,} messages: reports are "
                "refused, so no run expires as no-report until there is room; raise it as a NATS admin (`nats stream "
                f"edit {subjects.STREAM} --max-msgs`) or wait until old events age out (PODTAX_NATS_STREAM_MAX_AGE_S)")
    return ""


def stream_restricted(max_msg_size: int | None, max_payload: int) -> str:
    """Why the events stream refuses some reports whatever its room ('' when it does not): a max_msg_size set (podtax
    sets none) below the server's `max_payload` (one at or above it refuses nothing the server takes: said, every
    campaign showed stalled): a report above it is refused, and its run expires as no-report and runs again (its agent
    keeps the log, NATS never takes it). Said, not held: whether a report was refused is not known here. (A sealed
    stream refuses the runner's own events too: said as those, Room.refused.)"""
    if 0 < (max_msg_size or -1) < max_payload:
        return (f"the events stream {subjects.STREAM} has a max_msg_size of {max_msg_size:,} bytes (podtax sets none): "
                "a report above it is refused, and its run expires as no-report and runs again; lift it as a NATS "
                f"admin (`nats stream edit {subjects.STREAM} --max-msg-size -1`)")
    return ""


def subjects_full(counts: dict[str, int], limit: int | None) -> str:
    """Why a node's run subjects (their message `counts`) refuse its reports: one at the per-subject `limit`."""
    at = sorted(s for s, n in counts.items() if ".".join(s.split(".")[:3]) in REPORTS and (limit or -1) > 0
                and n >= limit)
    if not at:
        return ""
    return (f"subject {', '.join(at)} holds its limit of {limit:,} messages in stream {subjects.STREAM} (JetStream "
            "refuses more: 'maximum messages per subject exceeded'), so its runs' reports are refused and none of "
            "them expires as no-report until there is room; purge old messages of it (`nats stream purge "
            f"{subjects.STREAM} --subject SUBJECT --keep N`) or raise the limit as a NATS admin (`nats stream edit "
            f"{subjects.STREAM} --max-msgs-per-subject`; PODTAX_NATS_STREAM_MAX_MSGS_PER_SUBJECT applies only when "
            "the stream is created)")


class Room:
    """What the runner knows of NATS's room for reports (see the module). `clock` is the runner's (monotonic)."""

    def __init__(self, bus: Bus, kv: KeyValue, clock: Callable[[], float]) -> None:
        self.bus, self.kv, self.clock = bus, kv, clock
        self.full = ""  # why the events stream is full: no run expires meanwhile
        self.restricted = ""  # why the events stream refuses some reports whatever its room (stream_restricted)
        self.nodes: dict[tuple[str, str], str] = {}  # (env, node) -> why its subjects refuse its reports
        self.storage = ""  # why the server refuses writes for want of storage ('' when it took the probe)
        self.holds: dict[str, str] = {}  # run id -> why it is held from expiring (holding())
        self.refusals: dict[Where, str] = {}  # (campaign, node) -> why NATS refuses the runner's events for it
        self._looked: dict[object, float] = {}  # what was looked at (STREAM, natsroom.PROBE_KEY, (env, node)) -> when
        self._unknown_since: float | None = None  # since when no look got an answer
        self._unanswered_why = ""  # the last look without answer
        self._said: dict[str, float] = {}  # what was said -> when

    def say(self, level: int, text: str, key: str | None = None) -> None:
        """Log `text`, the same `key` (text by default) at most once every SAID_EVERY_S."""
        key, now = key or text, self.clock()
        if now - self._said.get(key, -math.inf) >= SAID_EVERY_S:
            self._said[key] = now
            log.log(level, "%s", text)

    def _due(self, what: object) -> bool:
        if self.clock() - self._looked.get(what, -math.inf) < PROBE_EVERY_S:
            return False
        self._looked[what] = self.clock()
        return True

    def _unanswered(self, what: str, exc: BaseException) -> None:
        """A look got no answer: said (holding()) when it holds a run."""
        if self._unknown_since is None:
            self._unknown_since = self.clock()
        self._unanswered_why = f"{what}: {type(exc).__name__}: {exc}"
        log.debug("could not look at the room NATS has for reports (%s)", self._unanswered_why)

    def unknown(self) -> bool:
        """Whether runs due are held because no look got an answer, within UNKNOWN_HOLD_S."""
        return self._unknown_since is not None and self.clock() - self._unknown_since < UNKNOWN_HOLD_S

    async def look_at_the_stream(self) -> bool:
        """Every PROBE_EVERY_S, whether the events stream is full: said once when it becomes so. True when it has
        room again after being full or unknown (the runs in flight then get their grace again)."""
        if not self.bus.nc.is_connected or not self._due(subjects.STREAM):
            return False
        if self.storage:  # refused for want of storage: looked at again until there is room
            await self._look_at_storage()
        try:  # asked under the runner's lock: never for long (NATS away: a request waited 5 s, and each tick with it)
            info = await asyncio.wait_for(self.bus.js.stream_info(subjects.STREAM), ANSWER_S)
        except Exception as exc:  # noqa: BLE001 - NATS away or slow: runs due are held (for a bound)
            self._unanswered(f"the events stream {subjects.STREAM}", exc)
            return False
        back = self._unknown_since is not None
        self._unknown_since = None
        was, self.full = self.full, stream_full(info.config.max_bytes, info.state.bytes or 0, info.config.max_msgs,
                                                info.state.messages or 0, self.bus.nc.max_payload)
        restricted = self.restricted
        self.restricted = stream_restricted(info.config.max_msg_size, self.bus.nc.max_payload)
        if self.restricted and self.restricted != restricted:
            log.error("%s", self.restricted)
        if self.full and not was:
            log.error("%s", self.full)
        elif was and not self.full:
            log.warning("the events stream %s has room again: runs in flight get their grace from now", subjects.STREAM)
        return bool(was and not self.full) or (back and not self.full)

    async def holding(self, due: Iterable[events.RunSpec]) -> tuple[dict[str, str], bool]:
        """The runs of `due` (their deadline passed) that must not expire now, each with why (their node's subjects
        at their limit, the server's storage used up, or no answer: see the module), and whether one held before is
        not any more (its campaign's runs in flight then get their grace again: their reports may come only now)."""
        due = list(due)
        if not due:
            return {}, False
        await self._look_at_storage()
        for env, node in sorted({(r.env, r.node) for r in due}):
            await self._look_at_node(env, node)
        out, released = {}, False
        for r in due:
            why = self.storage or self.nodes.get((r.env, r.node), "")
            if not why and self.unknown():
                why = "the room NATS has for its report could not be looked at (NATS slow or away)"
                self.say(logging.WARNING, f"could not look at the room NATS has for reports ({self._unanswered_why}): "
                         f"no run expires as no-report meanwhile, for at most {UNKNOWN_HOLD_S:.0f} s (then runs "
                         "expire as before)", key="unanswered")
            if why:
                out[r.run_id] = self.holds[r.run_id] = why
            elif self.holds.pop(r.run_id, None) is not None and self._unknown_since is None:
                released = True  # room again (past the bound of no answer: no grace again)
        return out, released

    async def _look_at_storage(self) -> None:
        """Write a small key of the runner's bucket: refused for want of room (10023 insufficient resources, ...),
        the server's storage is used up (a stream without a size limit reaches it: no stream is full)."""
        if not self._due(natsroom.PROBE_KEY):
            return
        try:  # natsroom's look, as `campaign status` makes it (one key, one set of codes)
            exc = await natsroom.refused(self.kv, ANSWER_S)
        except Exception as unanswered:  # noqa: BLE001 - no answer (or another error)
            self._unanswered("a write of the runner's bucket", unanswered)
            return
        if exc is not None:
            if not self.storage:
                log.error("NATS refuses writes for want of room (%s): no run expires as no-report until there is "
                          "room (each then gets its grace again)", exc)
            self.storage = f"NATS refuses writes for want of room: {exc}"
            return
        self.storage = ""

    async def _look_at_node(self, env: str, node: str) -> None:
        """Whether `node`'s run subjects hold their limit of messages (one stream info, its subjects filtered)."""
        if not self._due((env, node)):
            return
        try:
            info = await asyncio.wait_for(self.bus.js.stream_info(
                subjects.STREAM, subjects_filter=subjects.join("podtax.run.*", env, node)), ANSWER_S)
        except Exception as exc:  # noqa: BLE001 - NATS away or slow: held (for a bound)
            self._unanswered(f"node {node}'s subjects", exc)
            return
        was = self.nodes.pop((env, node), "")
        if why := subjects_full(info.state.subjects or {}, info.config.max_msgs_per_subject):
            self.nodes[(env, node)] = why
            if not was:
                log.error("node %s: %s", node, why)

    def refused(self, exc: BaseException, where: Iterable[Where], what: str) -> None:
        """NATS refused the runner's events for these (campaign, node): noted for those campaigns, said once a
        minute per reason."""
        text = lasting_text(exc, None, subjects.STREAM) or str(exc)  # a raw 10054 or 10109 named no fix
        why = f"NATS refuses the runner's events: {text}"
        for w in where:
            self.refusals[w] = why
        self.say(logging.ERROR, f"{what}: {type(exc).__name__}: {text} (said again once a minute while NATS refuses "
                 "them)", key=text)

    def taken(self, where: Iterable[Where]) -> None:
        """NATS took the runner's events for these (campaign, node)."""
        for w in where:
            self.refusals.pop(w, None)

    def stalled(self, campaign: str, in_flight: Iterable[str]) -> str | None:
        """Why the campaign's runs do not move (written in its state): NATS refusing its events, the stream full,
        or with a max_msg_size, the storage used up, the subjects of the node of a run of it in flight
        (`in_flight`: run ids) at their limit."""
        whys = [why for (c, _), why in sorted(self.refusals.items()) if c == campaign]
        whys += [self.full, self.restricted, self.storage, *(self.holds.get(rid, "") for rid in sorted(in_flight))]
        return "; ".join(dict.fromkeys(why for why in whys if why)) or None
