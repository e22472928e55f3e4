"""Publishing the logs kept in the outbox (outbox.py): at start, once the events stream is known, and on a timer.

A log NATS refused (its request retried, then dead-lettered: PODTAX_MAX_DELIVER) was published only when its request
came back or the agent started again; in a deployment nothing restarts the agent, so once the request was dead-lettered
the log stayed kept for good, the runner expired the run as no-report and it was measured again (after a restart, two
results of one planned run). Now every outbox.RETRY_S (10 s), while any log is kept, the agent tries them again
(retry_loop): a kept log goes out within 10 s of NATS taking it again, said once per log; a log still refused is said
once, not every 10 s.

With the events stream's max_msg_size below a log, the runner expires each attempt of a run (r, r-a2...) as
no-report and the agent measures and keeps each; once the limit was lifted, every one went and the analyzer stored
two results of one planned run. Now a kept log whose later attempt (the same run and submission, RunSpec.attempt) is
kept too or was reported is set aside (<run>.json.superseded, said once), never published: only the latest goes. A
stop (SIGTERM) ends a flush (natsagain.Stopped): each kept log waited for NATS after it (30 of them, NATS hanging,
took 15 s). The retry publishes nothing while the events stream is another than the agent's (NATS reset).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from podtax import events
from podtax.natsagain import Stopped, stop_event

from podtax_host_agent import measured, outbox

if TYPE_CHECKING:
    from podtax_host_agent.service import Agent

log = logging.getLogger("podtax.host_agent")
LAST_ATTEMPT = 10  # RunSpec.attempt's bound


def later_attempt(agent: Agent, event: events.RawLogV1, kept: list[str]) -> str | None:
    """The run id of a later attempt of `event`'s planned run (the same run id but its '-a<n>' suffix, the same
    campaign and submission) whose log is kept too (one of `kept`) or was reported (Agent.measured), else None."""
    run = event.data.run
    base = run.run_id.removesuffix(f"-a{run.attempt}") if run.attempt > 1 else run.run_id
    for attempt in range(run.attempt + 1, LAST_ATTEMPT + 1):
        later = run.model_copy(update={"run_id": f"{base}-a{attempt}", "attempt": attempt})
        if measured.key(later) in agent.measured:
            return later.run_id
        if later.run_id not in kept:
            continue
        other = outbox.load(agent.state_dir, later.run_id, agent.settings.agent_output_cap_bytes)
        if other and other.data.run.campaign == run.campaign and events.same_submission(other.data.run.submitted,
                                                                                       run.submitted):
            return later.run_id
    return None


def set_aside_superseded(agent: Agent, event: events.RawLogV1, kept: list[str], when: str) -> bool:
    """Set `event`'s kept log aside (outbox.SUPERSEDED, said once) when a later attempt of its run is kept or was
    reported: published too, one planned run had two results."""
    if (later := later_attempt(agent, event, kept)) is None:
        return False
    run_id = event.data.run.run_id
    try:
        where = outbox.set_aside_superseded(agent.state_dir, run_id)
    except FileNotFoundError:  # set aside or published meanwhile (a redelivery and the retry at once)
        return True
    log.warning("%s: the kept log of run %s is not published: its later attempt %s is kept or was reported (one "
                "result a planned run); set aside as %s", when, run_id, later, where)
    return True


async def flush(agent: Agent, when: str = "start-up", said: set[str] | None = None) -> None:
    """Publish the logs an earlier agent (or an earlier try) measured but could not publish (their requests may never
    come back: max_deliver). A failure leaves them for the next try; the events stream unknown (a log kept under another
    NATS is not told from this one's), they wait until it is known (learn_stream); the state directory unsafe, none is
    read (another user may have put it there). `said`: the run ids whose failure was said already (not said again;
    None: every failure said)."""
    if why := agent.state_dir_problem():
        log.error("%s: the kept logs are not published: %s", when, why)
        return
    if not agent.stream and (left := outbox.kept(agent.state_dir)):
        log.warning("%s: %d kept log(s) not published: the events stream is unknown, they may have been measured "
                    "under another NATS; published once it is known", when, len(left))
        agent.outbox_waits = True
        return
    stop = stop_event()
    for run_id in (left := outbox.kept(agent.state_dir)):
        if stop is not None and stop.is_set():
            return
        if (kept := outbox.load(agent.state_dir, run_id, agent.settings.agent_output_cap_bytes)) is None:
            continue
        if set_aside_superseded(agent, kept, left, when):
            continue
        try:
            await agent.report(kept)
        except Stopped:  # SIGTERM while it waited for NATS: the next kept log would wait so too
            raise
        except Exception as exc:  # noqa: BLE001 - kept for the next try; the agent must still start
            if said is None or run_id not in said:
                log.error("%s: the kept log of run %s is still not published (%s); kept, tried again every %g s",
                          when, run_id, exc, outbox.RETRY_S)
            if said is not None:
                said.add(run_id)
        else:
            log.warning("%s: published the kept log of run %s", when, run_id)
            if said is not None:
                said.discard(run_id)


async def retry_loop(agent: Agent, stop: asyncio.Event) -> None:
    """Every outbox.RETRY_S until `stop`, publish the kept logs, if any (skipped while the events stream is unknown or
    the state directory unsafe: said at start and by the requests; while the events stream is another than the
    agent's, NATS reset: said once, the agent's next start sets them aside)."""
    said: set[str] = set()
    reset_said = False
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), outbox.RETRY_S)
        except TimeoutError:
            if agent.stream and not agent.state_dir_problem() and outbox.kept(agent.state_dir):
                try:
                    if remade := await agent.stream_remade(0):
                        if not reset_said:
                            log.error("kept-log retry: the events stream is another (%s) than the one the kept logs "
                                      "were measured under (%s): NATS was reset; none is published (restart the "
                                      "agent: it sets them aside)", remade, agent.stream)
                        reset_said = True
                        continue
                    await flush(agent, "kept-log retry", said)
                except Stopped:
                    return
                except Exception as exc:  # noqa: BLE001 - the runs go on; tried again
                    log.error("kept-log retry: %s: %s; tried again in %g s", type(exc).__name__, exc, outbox.RETRY_S)
