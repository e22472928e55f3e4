"""A host agent's consumer deleted (`nats consumer rm PODTAX host-agent-<node>`) and the agent started again: the
consumer it makes again starts from the stream's first message, so every run request of its node still in the stream
is given to it again. Before, the agent measured again every one of them but the last it reported (hours of a real
campaign, and the new logs compete with the stored ones). Now it remembers, in its state directory, every run (and
submission) it measured: a replayed request of one is acked unrun, and a request not yet measured still runs, as does
the same run id of another submission. Real nats-server, the real agent (serve), real sysbench runs."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from podtax import events, subjects
from podtax.bus import Bus

from tests.integration.harness import wait_for
from tests.integration.served_agent import SUBMITTED, ServedAgent, executed_fixture, served_agent_fixture  # noqa: F401
from tests.integration.served_agent import run_spec as _run


async def test_a_replayed_stream_runs_only_what_was_not_measured(served_agent: tuple[Bus, ServedAgent, Any],
                                                                 executed: list[str]) -> None:
    bus, agent, nc = served_agent
    logs: list[str] = []

    async def on_log(msg: Any) -> None:
        logs.append(json.loads(msg.data)["data"]["run"]["run_id"])

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
    try:
        await bus.ensure_streams()
        agent.serve()
        for run_id in ("r-1", "r-2", "r-3"):
            await bus.publish(events.run_requested(_run(run_id), "podtax/runner"))
        await wait_for(lambda: len(logs) == 3, 120, "the three runs measured")
        await agent.stopped()
        assert executed == ["r-1", "r-2", "r-3"]

        await bus.publish(events.run_requested(_run("r-4"), "podtax/runner"))  # pending while the agent is away
        await agent.serve_replayed(bus)  # the restart: the stream replayed
        await wait_for(lambda: "r-4" in logs, 120, "the pending request measured")  # after r-1..r-3 (stream order)
        assert executed == ["r-1", "r-2", "r-3", "r-4"], "a run already measured was measured again"

        again = _run("r-1", SUBMITTED + dt.timedelta(seconds=1))  # the campaign submitted again: its own run
        await bus.publish(events.run_requested(again, "podtax/runner"))
        await wait_for(lambda: len(executed) == 5, 120, "the same run id of another submission measured")
        assert executed[-1] == "r-1"
    finally:
        await agent.stopped()
