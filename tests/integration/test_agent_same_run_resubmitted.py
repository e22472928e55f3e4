"""The host agent remembers the runs it reported in this process by their log's event id (the run id and its
submission), as it notes them in its state directory (measured.py): a request of a run it reported, given again, is
acked unrun, and the same run id of another submission (its campaign submitted again) is measured. Before, the
in-memory guard held run ids alone: that second submission's request was acked unrun, its result never measured
(only a restarted agent, reading its state directory, measured it). Real nats-server, the real agent (serve), real
sysbench runs."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from podtax import events, subjects
from podtax.bus import Bus

from tests.integration.harness import wait_for
from tests.integration.served_agent import SUBMITTED, ServedAgent, executed_fixture, served_agent_fixture  # noqa: F401
from tests.integration.served_agent import run_spec as _run


async def test_a_repeated_request_is_not_run_again_and_another_submission_of_its_run_id_is(
        served_agent: tuple[Bus, ServedAgent, Any], executed: list[str]) -> None:
    bus, agent, nc = served_agent
    logs: list[tuple[str, str | None]] = []

    async def on_log(msg: Any) -> None:
        run = json.loads(msg.data)["data"]["run"]
        logs.append((run["run_id"], run.get("submitted")))

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_log)
    try:
        await bus.ensure_streams()
        agent.serve()
        first = events.run_requested(_run("r-1"), "podtax/runner")
        await bus.publish(first)
        await wait_for(lambda: len(logs) == 1, 120, "r-1 measured")
        await bus.publish(first.model_copy(update={"id": f"{first.id}.again"}))  # the same request, not deduplicated
        again = _run("r-1", SUBMITTED + dt.timedelta(seconds=1))  # its campaign submitted again: its own run
        await bus.publish(events.run_requested(again, "podtax/runner"))
        await bus.publish(events.run_requested(_run("r-2"), "podtax/runner"))  # handled after both (stream order)
        await wait_for(lambda: any(r == "r-2" for r, _ in logs), 120, "r-2 measured")
        assert executed == ["r-1", "r-1", "r-2"], "the repeat run again, or the other submission not measured"
        assert [s for r, s in logs if r == "r-1"] == [SUBMITTED.isoformat().replace("+00:00", "Z"),
                                                    again.submitted.isoformat().replace("+00:00", "Z")], logs
    finally:
        await agent.stopped()
