"""The host agent's log refused by NATS until an admin acts (the events stream at its max_msg_size, sealed, full):
the measurement is kept in the agent's outbox, the refusal said in one line naming the fix and where the log is kept,
and once the limit is lifted the kept log is published without measuring again. Before, 10054 and 10109 were a
handler's traceback ('handler failed for podtax.run.requested.host.n1') naming no fix, and no refusal said that the
log was kept (probe: the real agent, each case 70 s: 5 deliveries, then 'dead-lettered ... gave up after 5
deliveries: BadRequestError: ... err_code=10054'). Real nats-server, the real agent (serve), real sysbench."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from nats.js.api import StreamConfig
from podtax import events, subjects
from podtax.bus import Bus
from podtax_host_agent import outbox

from tests.integration.harness import wait_for
from tests.integration.served_agent import NODE, ServedAgent, executed_fixture, served_agent_fixture  # noqa: F401
from tests.integration.served_agent import run_spec as _run
from tests.integration.test_runner_refusals_classified import limited

# case -> (the limit imposed, what the refusal says, the limit lifted; None: not liftable, a sealed stream)
CASES: dict[str, tuple[Callable[[StreamConfig], None], str, Callable[[StreamConfig], None] | None]] = {
    "max_msg_size": (limited(max_msg_size=1000), f"above the events stream {subjects.STREAM}'s max_msg_size "
                     "(message size exceeds maximum allowed, JetStream error 10054); raise that limit",
                     limited(max_msg_size=-1)),
    "sealed": (limited(sealed=True), f"the events stream {subjects.STREAM} is sealed", None),
    "max_bytes": (limited(max_bytes=300), "its stream is full (maximum bytes exceeded); raise its size limit",
                  limited(max_bytes=-1)),
}


async def stored(bus: Bus) -> int:
    """Logs the events stream holds (a plain subscriber sees a refused one too)."""
    info = await bus.js.stream_info(subjects.STREAM, subjects_filter=f"{subjects.RUN_LOG}.>")
    return sum((info.state.subjects or {}).values())


async def restrict(bus: Bus, change: Callable[[StreamConfig], None]) -> None:
    info = await bus.js.stream_info(subjects.STREAM)
    change(info.config)
    await bus.js.update_stream(info.config)


async def refused_while_running(bus: Bus, agent: ServedAgent, executed: list[str], caplog: pytest.LogCaptureFixture,
                                impose: Callable[[StreamConfig], None]) -> logging.LogRecord:
    """The agent served, run r-1 requested, the events stream restricted by `impose` while it runs: the refusal's
    record once said."""
    await bus.ensure_streams()
    agent.serve()
    await wait_for(lambda: "host facts published" in caplog.text, 60, "the agent started")
    run = _run("r-1").model_copy(update={"params": {"max_prime": 20000, "events": 2000, "threads": 1}})
    await bus.publish(events.run_requested(run, "podtax/runner"))  # a run of about a second
    await wait_for(lambda: executed == ["r-1"], 60, "the benchmark started")
    await restrict(bus, impose)  # while it runs: its log is refused
    failed = await wait_for(lambda: [r for r in caplog.records if "NATS refuses the log of run r-1" in r.getMessage()],
                            120, "the refusal said")
    return failed[0]


@pytest.mark.parametrize("case", list(CASES))
async def test_a_refused_log_is_kept_said_with_its_fix_and_published_once_lifted(
        case: str, served_agent: tuple[Bus, ServedAgent, Any], tmp_path: Path, executed: list[str],
        caplog: pytest.LogCaptureFixture) -> None:
    impose, says, lift = CASES[case]
    caplog.set_level(logging.INFO, logger="podtax")
    bus, agent, _ = served_agent
    try:
        failed = await refused_while_running(bus, agent, executed, caplog, impose)
        line = failed.getMessage()
        assert says in line, line
        kept = outbox._path(tmp_path / "state", "r-1")  # served_agent's state directory
        assert f"its log is kept in {kept} and published once NATS takes it (tried again every 10 s)" in line, line
        assert failed.exc_info is None, "said with a traceback"
        assert executed == ["r-1"] and outbox.kept(tmp_path / "state") == ["r-1"] and await stored(bus) == 0
        if lift is None:
            return
        await restrict(bus, lift)
        await agent.stopped(errors_ok=True)
        await agent.serve_replayed(bus)  # the agent restarted, its request given again
        await wait_for(lambda: outbox.kept(tmp_path / "state") == [], 120, "the kept log published")
        assert await stored(bus) == 1
        assert executed == ["r-1"], "measured again"
    finally:
        await agent.stopped(errors_ok=True)


async def test_a_kept_log_whose_request_was_dead_lettered_goes_once_nats_takes_it_without_a_restart(
        served_agent: tuple[Bus, ServedAgent, Any], tmp_path: Path, executed: list[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """The request retried, then dead-lettered while the stream is full: its kept log was published only by the
    agent's next start, which in a deployment never comes (the runner expired the run and it was measured again).
    Now the agent tries its kept logs again every outbox.RETRY_S, and says it once when one goes."""
    caplog.set_level(logging.INFO, logger="podtax")
    bus, agent, _ = served_agent
    try:
        await refused_while_running(bus, agent, executed, caplog, CASES["max_bytes"][0])
        await wait_for(lambda: "dead-lettered podtax.run.requested.host.n1" in caplog.text, 120, "dead-lettered")
        assert outbox.kept(tmp_path / "state") == ["r-1"] and await stored(bus) == 0
        await restrict(bus, CASES["max_bytes"][2])  # lifted, the agent still serving
        await wait_for(lambda: outbox.kept(tmp_path / "state") == [], 120, "the kept log published")
        assert await stored(bus) == 1 and executed == ["r-1"]
        went = [r.getMessage() for r in caplog.records if "published the kept log of run r-1" in r.getMessage()]
        assert went == ["kept-log retry: published the kept log of run r-1"], went
        assert agent.task is not None and not agent.task.done()
    finally:
        await agent.stopped(errors_ok=True)


async def test_a_runs_failure_nats_refuses_is_said_in_one_line_with_its_fix(
        served_agent: tuple[Bus, ServedAgent, Any], caplog: pytest.LogCaptureFixture) -> None:
    """The agent's other events (a run's `run failed`, the host's facts) refused until an admin acts: before, a
    handler's traceback naming no fix ('handler failed for podtax.run.requested.host.n1' and nats-py's
    BadRequestError ... err_code=10054); now one line with the fix, as a refused log (outbox.publish_event)."""
    caplog.set_level(logging.INFO, logger="podtax")
    bus, agent, _ = served_agent
    await bus.ensure_streams()
    agent.serve()
    try:
        await wait_for(lambda: "host facts published" in caplog.text, 60, "the agent started")
        request = events.run_requested(_run("r-2").model_copy(update={"params": {"max_prime": "many"}}), "test")
        await restrict(bus, limited(max_msg_size=bus.wire_bytes(request) + 16))  # its refusal is longer
        await bus.publish(request)
        failed = await wait_for(lambda: [r for r in caplog.records if "handler failed" in r.getMessage()], 120,
                                "the refusal said")
        line = failed[0].getMessage()
        assert "NATS refuses the failure of run r-2 (" in line and "--max-msg-size" in line, line
        assert failed[0].exc_info is None, "said with a traceback"
    finally:
        await agent.stopped(errors_ok=True)
