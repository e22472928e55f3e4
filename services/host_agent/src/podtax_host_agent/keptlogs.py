"""Publishing the logs kept in the outbox (outbox.py): at start, once the events stream is known, and on a timer.

A log NATS refused (its request retried, then dead-lettered: PODTAX_MAX_DELIVER) was published only when its request
came back or the agent started again; in a deployment nothing restarts the agent, so once the request was dead-lettered
the log stayed kept for good, the runner expired the run as no-report and it was measured again (after a restart, two
results of one planned run). Now every outbox.RETRY_S (10 s), while any log is kept, the agent tries them again
(retry_loop): a kept log goes out within 10 s of NATS taking it again, said once per log; a log still refused is said
once, not every 10 s.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from podtax_host_agent import outbox

if TYPE_CHECKING:
    from podtax_host_agent.service import Agent

log = logging.getLogger("podtax.host_agent")


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
    for run_id in outbox.kept(agent.state_dir):
        if (kept := outbox.load(agent.state_dir, run_id, agent.settings.agent_output_cap_bytes)) is None:
            continue
        try:
            await agent.report(kept)
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
    the state directory unsafe: said at start and by the requests)."""
    said: set[str] = set()
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), outbox.RETRY_S)
        except TimeoutError:
            if agent.stream and not agent.state_dir_problem() and outbox.kept(agent.state_dir):
                try:
                    await flush(agent, "kept-log retry", said)
                except Exception as exc:  # noqa: BLE001 - the runs go on; tried again
                    log.error("kept-log retry: %s: %s; tried again in %g s", type(exc).__name__, exc, outbox.RETRY_S)
