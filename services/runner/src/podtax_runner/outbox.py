"""A run's report (its log, timeline or failure) held in memory until NATS takes it, shared by the executors.

NATS away (stopped, restarting): nats-py keeps a publish it could not send in its pending buffer and flushes it on
reconnecting, after the publish timed out. A report given up at its first failure ('the run expires as no-report
and runs again') still landed then, beside the retry's: two results for one planned run (review r4 of 686c54e, for
control-plane runs; the same for pod runs). So a report NATS does not take is sent again, under the same event id
(JetStream stores it once), every 1-10 s until NATS takes it, however long, or the runner stops; its run is `held`
meanwhile and does not expire (CampaignState.expired, Runner.tick).

NATS refusing it (the events stream full, or the run's subject at its own limit: bus.refusal_text) is no outage that
ends by itself: it was said in the same warning as one ('NATS stopped or restarting?') every 10 s, and the run and
its campaign waited for ever with nothing said where the operator looks. Now it is said in an error naming the limit
and what to raise (again only when the reason changes, or every REPEAT_EVERY attempts), and why each report is held
is kept (holding()): the runner writes it in the campaign's state, which `podtax campaign status` shows. The report
is still kept and sent again: a measured result is never given up for a limit an admin can raise.

A refusal lasts until an admin acts, which may outlast the runner (an upgrade, a node drained): the report held in
memory was given up as the runner stopped, and the next runner ran the run again (a control-plane run, a pod run whose
Job was deleted as the log was given up), so the measurement made was lost. Now a report NATS refuses is also kept in
the runner's bucket (KEPT: its event's bytes; the runner's own stream, which has room while the events stream is full)
until NATS takes it; the next runner sends that copy instead of running the run again (Runner.load, resend). A
server whose storage is used up refuses that write too: then the copy is written in the runner's spool
(PODTAX_RUNNER_SPOOL_DIR, spool.py), read by the next runner as the bucket's; without one only the memory copy is
held, said once (a restart then runs the run again).
The copy names its campaign's submission (its created_at: a copy of a campaign of the same name submitted again is
refused) and goes only once the run is recorded as reported (release(): a runner crashing between NATS taking the
report and that record sends the copy again, de-duplicated, instead of running the run again); a copy left behind
(its removal failed, or a keep that timed out after the write landed) is sorted out by the next runner (kept.py).

Refusals that are no want of room last until an admin acts too, and were taken for NATS away (no copy kept, a runner
stop lost the report): a report above the events stream's max_msg_size (JetStream error 10054, the server's
max_payload letting it through) or above the server's max_payload (bus.TooBig, refused before it is sent), the
events stream sealed (10109), and a publish no stream answers ('no response from stream') while the events stream is
not there (deleted). answer() says each as a Refusal naming the fix; such a report is kept as above. A 'no response
from stream' of a stream that is there (between leaders) is NATS away, as is any other error (JetStream's 503s:
'JetStream system temporarily unavailable', 'expected last sequence per subject temporarily unavailable')."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from nats.js.errors import NoStreamResponseError
from podtax import events, subjects, templates
from podtax.bus import Bus, TooBig, at_limit
from podtax.buspipeline import gone
from podtax.busrefusal import lasting, lasting_text

if TYPE_CHECKING:
    from podtax_runner.spool import Spool

PUBLISH_TIMEOUT_S = 15.0  # one attempt (nats-py's ack wait is 5 s)
PUBLISH_BACKOFF_S = (1.0, 10.0)  # the first wait between attempts, doubled up to the second
REPEAT_EVERY = 30  # a refusal unchanged is said again every this many attempts (5 min at 10 s)
KEPT = "held"  # the runner's bucket: held.<campaign>.<run id> -> a refused report's event, until NATS takes it
KEEP_TIMEOUT_S = 5.0  # one write (or removal) of that copy


class Refusal(Exception):
    """NATS refusing a report for another reason than want of room, until an admin acts (answer()): why, and the fix."""


def kept_key(run: events.RunSpec) -> str:
    return f"{KEPT}.{run.campaign}.{run.run_id}"


def what_of(event: events.Envelope, run: events.RunSpec) -> str:
    """What a kept report is of its run, as the executors name it in their log: its failure, timeline or log."""
    if isinstance(event, events.RunFailedV1):
        return "failure"
    return "timeline" if templates.get(run.test).control_plane else "log"


def refused(exc: BaseException) -> bool:
    """Whether NATS answered the publish with a refusal that lasts until an admin acts: for want of room (bus.LIMITS:
    the stream or a subject at its limit, the server's storage used up; bus.refusal_text), or another (Refusal, or
    busrefusal.lasting not made one yet), not silence (an Unacked of publish_many whose acks did not come
    in time) nor another error (a 503 'JetStream system temporarily unavailable' of a leader change): those are NATS
    away, sent again with a warning."""
    return at_limit(exc) or isinstance(exc, (Refusal, TooBig)) or lasting(exc)


async def answer(bus: Bus, event: events.Envelope, exc: Exception) -> Exception:
    """`exc` of a publish of `event`, as a Refusal naming the fix when it is one but no want of room (the module);
    else `exc` itself."""
    stream = subjects.STREAM
    if lasting(exc) and (why := lasting_text(exc, bus.wire_bytes(event), stream)) is not None:
        return Refusal(why)
    if isinstance(exc, TooBig):  # its words name the host agent's output cap, which bounds no report of the runner
        return Refusal(f"it is {bus.wire_bytes(event):,} bytes with its NATS headers, above the server's max_payload "
                       f"of {bus.nc.max_payload:,}; raise max_payload in nats-server's configuration, then restart "
                       "nats-server (a connection keeps the max_payload it met: a reload does not reach it; the runner "
                       "sends the report once it has connected again)")
    if isinstance(exc, NoStreamResponseError) and await _stream_gone(bus, event.subject):
        return Refusal(f"no stream takes {event.subject}: the events stream {stream} is not there (deleted?); "
                       "restart the runner, which makes it as it starts (a restarting runner sends this report from "
                       "its bucket), or restore it")
    return exc


async def _stream_gone(bus: Bus, subject: str) -> bool:
    """Whether no stream takes `subject` (buspipeline.gone); False when the question itself fails (NATS going away
    meanwhile: the publish's own error stands, sent again), not an error out of Outbox.send (review rJ)."""
    try:
        return await gone(bus.js.find_stream_name_by_subject(subject))
    except Exception:  # noqa: BLE001 - a closed or reconnecting connection: not an answer about the stream
        return False


def kept_value(event: events.Envelope, submitted: str) -> bytes:
    """What KEPT holds of a refused report: its event and its campaign's submission (created_at, ISO 8601)."""
    return json.dumps({"submitted": submitted, "event": events.encode(event).decode()}).encode()


def kept_copy(value: bytes) -> tuple[str | None, events.Envelope]:
    """(the submission, the report) of a kept copy; ValueError when it is not one (a log or failure event). A copy the
    runner kept before copies named their submission is the bare event: its submission None (not known)."""
    try:
        doc = json.loads(value)
        if isinstance(doc, dict) and "submitted" not in doc and "event" not in doc:
            submitted, event = None, events.decode(value)  # the bare event (review r6, L3: it was removed, run again)
        else:
            submitted, event = doc["submitted"], events.decode(doc["event"].encode())
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a kept report ({type(exc).__name__}: {exc})") from None
    if not isinstance(event, (events.RawLogV1, events.RunFailedV1)) or not isinstance(submitted, (str, type(None))):
        raise ValueError(f"not a kept report (a {type(event).__name__})")
    return submitted, event


class Outbox:
    """Reports being published: `kind` names the runs in the log ('control-plane run', 'pod run'), `resumed` says
    what the next runner does with a run whose report a stopping runner gave up."""

    def __init__(self, bus: Bus, log: logging.Logger, kind: str, resumed: str) -> None:
        self.bus, self.log, self.kind, self.resumed = bus, log, kind, resumed
        self.held: dict[str, str] = {}  # run id -> why its report is held until NATS takes it (being published)
        self.stopping = False
        self.closing = asyncio.Event()  # stop(): a held report waiting to be sent again is given up at once
        self.copies: dict[str, bool] = {}  # run id -> its copy kept in KEPT (False: tried; the write may have landed)
        self.submitted_of: Callable[[str], str] = lambda campaign: ""  # a campaign's created_at (the runner's)
        self.spool: Spool | None = None  # where a copy the bucket refuses is kept (PODTAX_RUNNER_SPOOL_DIR)
        # KEPT key -> (its run, its campaign's submission): a copy whose removal failed
        self.leftover: dict[str, tuple[events.RunSpec, str]] = {}

    async def send(self, run: events.RunSpec, event: events.Envelope, what: str, kept: bool = False) -> bool:
        """Publish `event`, the run's `what` (its log, timeline or failure); True once NATS took it (its kept copy,
        if any, goes at release()). One NATS does not take is held and sent again until NATS takes it or the runner
        stops (then said not published: False); one it refuses is kept in the runner's bucket meanwhile (`kept`: it
        is already, a copy an earlier runner kept)."""
        delay, sent, said, taken = PUBLISH_BACKOFF_S[0], 0, "", False
        self.held[run.run_id] = ""  # no reason yet: its first attempt
        if kept:
            self.copies[run.run_id] = True
        try:
            while True:
                sent += 1
                try:
                    await asyncio.wait_for(self.bus.publish(event), PUBLISH_TIMEOUT_S)
                except Exception as raised:  # noqa: BLE001 - NATS away, restarting, or refusing: sent again
                    exc = await answer(self.bus, event, raised)
                    why = f"{type(exc).__name__}: {exc}"
                    if not self.stopping:
                        if refused(exc) and self.copies.get(run.run_id) is not True:  # before the reason is
                            # recorded (and written); tried from now on, whatever the answer (it may land late)
                            first, self.copies[run.run_id] = run.run_id not in self.copies, False
                            self.copies[run.run_id] = await self._keep(run, event, what, first)
                        said = self._held(run, what, exc, delay, said, sent)
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(self.closing.wait(), delay)
                        delay = min(2 * delay, PUBLISH_BACKOFF_S[1])
                    if self.stopping:
                        self._unpublished(run, what, f"{why}; sent {sent} times", self.copies.get(run.run_id) is True)
                        return False
                    continue
                if sent > 1:
                    self.log.warning("%s %s: its %s was published at attempt %d", self.kind, run.run_id, what, sent)
                taken = True
                return True
        except asyncio.CancelledError:
            self._unpublished(run, what, f"cancelled while sending it; sent {sent} times",
                              self.copies.get(run.run_id) is True)
            raise
        finally:
            self.held.pop(run.run_id, None)
            if not taken:  # its copy (if any) stays for the next runner
                self.copies.pop(run.run_id, None)

    async def release(self, run: events.RunSpec, recorded: bool) -> None:
        """NATS took the run's report and the runner tried to record it as reported: its kept copy (one was written,
        or tried) goes once that record is saved (`recorded`); otherwise the next runner sorts it out (kept.py). A
        copy whose removal failed before is removed again now (NATS took a report: it has room again)."""
        if self.copies.pop(run.run_id, None) is not None and recorded:
            await self._unkeep(run, self.submitted_of(run.campaign))
        for key, (left, submitted) in list(self.leftover.items()):
            if left.run_id == run.run_id:
                continue
            if self.submitted_of(left.campaign) not in ("", submitted):  # its campaign submitted again: the key
                self.leftover.pop(key)  # (run ids repeat) may hold the new submission's copy, which must stay
                continue
            await self._unkeep(left, submitted, again=True)

    async def _keep(self, run: events.RunSpec, event: events.Envelope, what: str, first: bool) -> bool:
        """Keep a copy of the refused report in the runner's bucket (see the module), or, when that write fails too
        (the server's storage used up), in its spool (PODTAX_RUNNER_SPOOL_DIR: spool.py): True once written. A write
        refused or unanswered is said once (`first`), and tried again at the next refusal."""
        value = kept_value(event, self.submitted_of(run.campaign))
        try:
            kv = await asyncio.wait_for(self.bus.kv(subjects.RUNNER_BUCKET), KEEP_TIMEOUT_S)
            await asyncio.wait_for(kv.put(kept_key(run), value), KEEP_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - the memory copy is still held and sent again
            why = f"{type(exc).__name__}: {exc}"
            if self.spool is not None:
                try:
                    path = await asyncio.to_thread(self.spool.write, run, self.submitted_of(run.campaign), value)
                except OSError as spooled:
                    why += f"; nor in its spool ({type(spooled).__name__}: {spooled})"
                else:
                    if first:
                        self.log.warning("%s %s: its %s could not be kept in the runner's bucket (%s): kept in its "
                                         "spool (%s) until NATS takes it", self.kind, run.run_id, what, why, path.name)
                    return True
            if first:
                self.log.error("%s %s: its %s could not be kept in the runner's bucket too (%s): it is held in "
                               "memory only, and a runner restart before NATS takes it runs the run again%s",
                               self.kind, run.run_id, what, why, "" if self.spool is not None else
                               " (PODTAX_RUNNER_SPOOL_DIR keeps it on the runner's disk then)")
            return False
        return True

    async def _unkeep(self, run: events.RunSpec, submitted: str, again: bool = False) -> None:
        """The report is recorded as reported: its kept copy goes, in the bucket and in the spool (that submission's
        file only). One whose removal fails is removed again at the next release() unless its campaign was submitted
        again meanwhile (before, only by the next runner: the copy stayed in the bucket meanwhile; never sent again,
        as its run is recorded as reported); said once (not `again`)."""
        key, self.leftover[kept_key(run)] = kept_key(run), (run, submitted)
        try:
            if self.spool is not None:
                await asyncio.to_thread(self.spool.remove, run, submitted)
            kv = await asyncio.wait_for(self.bus.kv(subjects.RUNNER_BUCKET), KEEP_TIMEOUT_S)
            await asyncio.wait_for(kv.delete(key), KEEP_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - harmless: its run is recorded as reported
            if not again:
                self.log.warning("%s %s: the kept copy of its report was not removed (%s: %s): removed again once "
                                 "NATS takes another report, or by the next runner (its run is recorded as reported: "
                                 "it is not sent again)", self.kind, run.run_id, type(exc).__name__, exc)
            return
        self.leftover.pop(key, None)

    def _held(self, run: events.RunSpec, what: str, exc: Exception, delay: float, said: str, sent: int) -> str:
        """Record why the run's report is held, and say it: a refusal in an error, once per reason (and every
        REPEAT_EVERY attempts); NATS away in a warning each time, not recorded (the runner would try to write it in
        the campaign's state on that NATS, holding its lock for a save's timeout). The reason said."""
        if refused(exc):
            why = f"NATS refuses its {what}: {exc}"
            self.held[run.run_id] = why
            if why != said or sent % REPEAT_EVERY == 0:
                self.log.error("%s %s: %s. The %s is kept and sent again every %.0f s until NATS takes it; the run is "
                               "held in flight meanwhile (`podtax campaign status` says why) and does not expire",
                               self.kind, run.run_id, why, what, PUBLISH_BACKOFF_S[1])
            return why
        self.log.warning("%s %s: could not publish its %s (%s: %s): NATS stopped or restarting? held, sending it again "
                         "in %.0f s until NATS takes it (the run does not expire meanwhile)", self.kind, run.run_id,
                         what, type(exc).__name__, exc, delay)
        return ""

    def _unpublished(self, run: events.RunSpec, what: str, why: str, kept: bool) -> None:
        then = "its copy is kept in the runner's bucket: the next runner sends it (the run is not run again)" \
            if kept else self.resumed
        self.log.error("%s %s: its %s was not published (%s): the runner stopped before NATS took it; %s",
                       self.kind, run.run_id, what, why, then)

    async def resend(self, run: events.RunSpec, event: events.Envelope) -> bool:
        """Send the report of a run an earlier runner kept (KEPT: NATS refused it), instead of running it again: True
        once NATS took it (the executor then records it as reported, and release() removes the copy)."""
        what = what_of(event, run)
        if not await self.send(run, event, what, kept=True):
            return False
        self.log.warning("%s %s: its %s, kept by an earlier runner, was sent again (stored once: NATS drops a copy "
                         "it has already)", self.kind, run.run_id, what)
        return True

    def holding(self) -> dict[str, str]:
        """The run ids whose report is held here until NATS takes it (none of them expires meanwhile), each with why."""
        return dict(self.held)

    def stop(self) -> None:
        """The runner stops: a report NATS does not take is given up (said in an error), one waiting at once."""
        self.stopping = True
        self.closing.set()
