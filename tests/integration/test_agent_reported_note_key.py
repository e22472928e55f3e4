"""The host agent's note of the run it reported last (`<state>/reported`) names the run by its log's event id (the run
id and its submission, measured.key), as its memory of the runs it reported and `<state>/measured` do: started again,
it acks that run's request unrun and measures the same run id of another submission (its campaign submitted again).
Before, the note held the run id alone, and the agent started again acked that other submission's request unrun, its
result never measured. An older agent's note (the run id alone) is read as before: a request of that run id is acked
unrun. Real nats-server, the real agent (serve), real sysbench runs."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from podtax import events, subjects
from podtax.bus import Bus
from podtax_host_agent import guard, measured

from tests.integration.harness import wait_for
from tests.integration.served_agent import SUBMITTED, ServedAgent, executed_fixture, served_agent_fixture  # noqa: F401
from tests.integration.served_agent import run_spec as _run


async def _logged(nc: Any) -> list[tuple[str, str | None]]:
    """The (run id, submission) of each run log published, in order."""
    logs: list[tuple[str, str | None]] = []

    async def on_log(msg: Any) -> None:
        run = json.loads(msg.data)["data"]["run"]
        logs.append((run["run_id"], run.get("submitted")))

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
    return logs


async def test_started_again_it_measures_another_submission_of_the_run_it_noted_reported(
        served_agent: tuple[Bus, ServedAgent, Any], executed: list[str]) -> None:
    bus, agent, nc = served_agent
    logs = await _logged(nc)
    try:
        await bus.ensure_streams()
        agent.serve()
        first = _run("r-1")
        await bus.publish(events.run_requested(first, "podtax/runner"))
        await wait_for(lambda: len(logs) == 1, 120, "r-1 measured")
        await agent.stopped()
        assert guard.last_reported(agent.settings.agent_state_dir) == measured.key(first)
        await agent.serve_replayed(bus)  # started again: r-1's request given again, acked unrun
        again = _run("r-1", SUBMITTED + dt.timedelta(seconds=1))  # its campaign submitted again: its own run
        await bus.publish(events.run_requested(again, "podtax/runner"))
        await bus.publish(events.run_requested(_run("r-2"), "podtax/runner"))  # handled after both (stream order)
        await wait_for(lambda: any(r == "r-2" for r, _ in logs), 120, "r-2 measured")
        assert executed == ["r-1", "r-1", "r-2"], "the other submission of the run noted reported not measured"
        assert [s for r, s in logs if r == "r-1"] == [SUBMITTED.isoformat().replace("+00:00", "Z"),
                                                    again.submitted.isoformat().replace("+00:00", "Z")], logs
    finally:
        await agent.stopped()


async def test_an_older_agents_note_of_a_run_id_alone_still_acks_that_run_unrun(
        served_agent: tuple[Bus, ServedAgent, Any], executed: list[str]) -> None:
    bus, agent, nc = served_agent
    logs = await _logged(nc)
    try:
        await bus.ensure_streams()
        guard.reported(agent.settings.agent_state_dir, "r-1")  # an older agent's note, in this NATS (written after it)
        agent.serve()
        await bus.publish(events.run_requested(_run("r-1"), "podtax/runner"))
        await bus.publish(events.run_requested(_run("r-2"), "podtax/runner"))
        await wait_for(lambda: any(r == "r-2" for r, _ in logs), 120, "r-2 measured")
        assert executed == ["r-2"], "the run an older agent noted reported run again"
        assert [r for r, _ in logs] == ["r-2"], logs
    finally:
        await agent.stopped()
