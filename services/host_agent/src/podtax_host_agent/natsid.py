"""Which NATS the host agent is connected to: the identity of its events stream (its creation time), which tells this
NATS from an earlier one (reset). A campaign name is unique in one NATS only, and run ids are made from it, so every
note the agent keeps (a cancelled campaign, the run reported last, a kept log) names the NATS it was written in and
counts there only (guard.same_nats)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from podtax import events, subjects
from podtax.bus import Bus
from podtax.config import HostAgentSettings

from podtax_host_agent import guard, measured, outbox

log = logging.getLogger("podtax.host_agent")
DONE_KEEP = 10_000  # runs remembered as reported (their log's event ids, about 1 MB), and as many cancelled campaigns
STREAM_ASK_S = 60.0  # the events stream unknown: how often it is asked again (a NATS refusing answers nothing: 10 s)
REQUEST_ASK_S = 2.0  # how long a run request waits for the answer (NATS hanging on stream info, consumers delivering)


def user_problem(settings: HostAgentSettings) -> str | None:
    """Why this agent's NATS user cannot be its node's (each node's agent has its own, natsauth.node_user), or
    None: with another node's user, NATS refuses its consumers and subjects (it stopped saying its permissions
    were older than the agent); the one user of every node before is no more."""
    from urllib.parse import urlsplit

    from podtax import natsauth

    user = settings.nats_user or urlsplit(settings.nats_url.split(",")[0].strip()).username
    mine = natsauth.node_user(settings.agent_node)
    if user == natsauth.HOST_AGENT:
        return (f"PODTAX_NATS_USER: {user} was every node's agent's user; each node's has its own now: {mine} "
                f"(`podtax nats-auth node {settings.agent_node}`, deploy/host/INSTALL.md step 3)")
    if (node := natsauth.node_of(user)) is not None and node != settings.agent_node:
        return (f"PODTAX_NATS_USER: {user} is the NATS user of node {node}'s agent, and this agent answers for "
                f"{settings.agent_node} (PODTAX_AGENT_NODE): give it {mine}, or set PODTAX_AGENT_NODE={node}")
    return None


class NatsIdentity:
    """The host agent's part that learns the events stream and judges its notes by it (service.Agent)."""

    settings: HostAgentSettings
    bus: Bus
    state_dir: Path
    stream: str  # the events stream of the NATS connected to ('' unknown)
    stream_asked: float  # when it was asked last (time.monotonic())
    noted: tuple[str, str] | None
    done: dict[str, None]
    measured: dict[str, str]
    cancelled: dict[str, str]
    outbox_waits: bool
    state_dir_problem: Callable[[], str | None]
    flush_outbox: Callable[[str], Awaitable[None]]

    async def learn_stream(self, wait_s: float = 10.0) -> None:
        """Learn the events stream's identity (its creation time), which tells this NATS from another: a campaign name
        is unique in one (the CLI and the runner refuse it again), one cancelled in an earlier NATS may come back as a
        new campaign and runs, and its run ids (made from the name and the cell) come back too. Each note names the
        stream it was written in and counts there only; one written while that was unknown (or by an older agent) is
        given it, or dropped when written before it (guard.stamped). So the run noted reported at start is forgotten
        when of another NATS, and a log kept in the outbox under another NATS is set aside (outbox.set_aside), not
        published as this NATS's run; the logs kept at start that waited for the stream are then published. Unknown
        (NATS does not answer within `wait_s`): every campaign noted cancelled is refused, as before."""
        self.stream_asked = time.monotonic()
        try:
            created = await self.stream_created(wait_s)
        except Exception as exc:  # noqa: BLE001 - refusing a name too many is the safe side
            log.warning("the events stream's creation time is unknown (%s): a campaign noted cancelled is refused "
                        "whichever NATS it was cancelled in", f"{type(exc).__name__}: {exc}")
            return
        if created is None:
            return
        self.stream, at = created.isoformat(), created.timestamp()
        self.cancelled = guard.stamped(self.cancelled, self.stream, at)
        self.measured = guard.stamped(self.measured, self.stream, at)
        if self.noted and not guard.same_nats(self.noted[1], self.stream, at):
            self.done.pop(self.noted[0], None)
        self.noted = None  # judged
        if why := self.state_dir_problem():  # its kept logs are not read (another user's, perhaps)
            log.error("the kept logs are neither set aside nor published: %s", why)
            return
        cap = self.settings.agent_output_cap_bytes
        for run_id, noted, where in await asyncio.to_thread(outbox.set_aside, self.state_dir, self.stream, at, cap):
            log.warning("the kept log of run %s was measured under another NATS (%s; this one's events stream: %s): "
                        "set aside as %s, not published as this NATS's run", run_id, noted, self.stream, where)
        if self.outbox_waits:
            self.outbox_waits = False
            await self.flush_outbox("the events stream known")

    async def stream_created(self, wait_s: float = 10.0) -> dt.datetime | None:
        """The events stream's creation time, asked of NATS (its errors raised; `wait_s` at most)."""
        return (await asyncio.wait_for(self.bus.js.stream_info(subjects.STREAM), wait_s)).created

    async def stream_remade(self, since: float) -> str | None:
        """The events stream's identity when it is another than the one the agent knows, or, unknown, one made after
        `since` (a run's start, epoch seconds: a NATS reset while it ran), else None (NATS not answering too)."""
        try:
            created = await self.stream_created(REQUEST_ASK_S)  # a run request's path
        except Exception:  # noqa: BLE001 - NATS away: the log is kept, its publish fails
            return None
        if created is None or (created.isoformat() == self.stream if self.stream else created.timestamp() <= since):
            return None
        return created.isoformat()

    async def learn_stream_again(self) -> None:
        """learn_stream when the stream is still unknown, at most every STREAM_ASK_S."""
        if not self.stream and time.monotonic() - self.stream_asked >= STREAM_ASK_S:
            await self.learn_stream()

    def noted_is(self, run: events.RunSpec) -> bool:
        """Whether `run` is the run noted reported before the start, not judged yet: the note holds its key (the run id
        and its submission, measured.key), or, an older agent's, its run id alone."""
        return self.noted is not None and self.noted[0] in (measured.key(run), run.run_id)

    async def learn_stream_for(self, run: events.RunSpec) -> None:
        """A run request with the stream unknown: asked at once when the run is the one noted reported or has a kept
        log (both are judged by it), else at most every STREAM_ASK_S (the kept logs waiting are published then); an
        answer is waited for REQUEST_ASK_S at most. Not every request: NATS hanging on stream info while its consumers
        deliver, each waited 10 s (two requests acked as reported already took 20 s, review hR8)."""
        if self.stream:
            return
        judged = self.noted_is(run) or (not self.state_dir_problem() and run.run_id in outbox.kept(self.state_dir))
        if judged or time.monotonic() - self.stream_asked >= STREAM_ASK_S:
            await self.learn_stream(REQUEST_ASK_S)

    def is_cancelled(self, campaign: str) -> bool:
        """Cancelled in this NATS's events stream (or in one unknown)."""
        noted = self.cancelled.get(campaign)
        return noted is not None and (noted == self.stream or noted.startswith("@") or not self.stream)

    def note_cancelled(self, campaign: str, nats: str) -> None:
        """In memory, newest last (bounded: DONE_KEEP)."""
        self.cancelled.pop(campaign, None)
        self.cancelled[campaign] = nats
        if len(self.cancelled) > DONE_KEEP:
            del self.cancelled[next(iter(self.cancelled))]
