"""The host agent's log refused by NATS until an admin acts (the events stream at its max_msg_size, sealed, full):
the measurement is kept in the agent's outbox, the refusal said in one line naming the fix and where the log is kept,
and once the limit is lifted the kept log is published without measuring again. Before, 10054 and 10109 were a
handler's traceback ('handler failed for podtax.run.requested.host.n1') naming no fix, and no refusal said that the
log was kept (probe: the real agent, each case 70 s: 5 deliveries, then 'dead-lettered ... gave up after 5
deliveries: BadRequestError: ... err_code=10054'). Real nats-server, the real agent (serve), real sysbench."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from nats.js.api import StreamConfig
from podtax import events, natsserver, subjects
from podtax.bus import Bus
from podtax.natsagain import Stopped, watch_stop
from podtax_host_agent import keptlogs, outbox, service

from tests import paused
from tests.integration.harness import wait_for
from tests.integration.served_agent import NODE, SUBMITTED, ServedAgent, executed_fixture, served_agent_fixture  # noqa: F401
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


async def test_of_two_attempts_kept_while_the_stream_refuses_them_only_the_later_is_published(
        served_agent: tuple[Bus, ServedAgent, Any], tmp_path: Path, executed: list[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """A max_msg_size below the log: the runner expired run r-1 as no-report and requested r-1-a2, measured and kept
    too; once the limit was lifted both went and the analyzer stored two results of one planned run (review rO2:
    PHASE2 logs=2). Now the earlier attempt's kept log is set aside (<run>.json.superseded), said once."""
    caplog.set_level(logging.INFO, logger="podtax")
    bus, agent, _ = served_agent
    state = tmp_path / "state"
    try:
        await refused_while_running(bus, agent, executed, caplog, CASES["max_msg_size"][0])
        again = _run("r-1-a2").model_copy(update={"attempt": 2, "params": {"max_prime": 2000, "events": 20,
                                                                            "threads": 1}})
        await bus.publish(events.run_requested(again, "podtax/runner"))  # the runner's retry of the expired run
        await wait_for(lambda: "NATS refuses the log of run r-1-a2" in caplog.text, 120, "the retry's refusal said")
        assert executed == ["r-1", "r-1-a2"] and sorted(outbox.kept(state)) == ["r-1", "r-1-a2"]
        await restrict(bus, CASES["max_msg_size"][2])  # lifted, the agent still serving
        await wait_for(lambda: outbox.kept(state) == [], 120, "the kept logs gone")
        assert await stored(bus) == 1, "both attempts' logs published"
        assert (state / "outbox" / "r-1.json.superseded").is_file()
        said = [r.getMessage() for r in caplog.records if "the kept log of run r-1 is not published" in r.getMessage()]
        assert len(said) == 1 and "its later attempt r-1-a2 is kept or was reported" in said[0], said
    finally:
        await agent.stopped(errors_ok=True)


def kept_log(run: events.RunSpec) -> events.RawLogV1:
    now = dt.datetime.now(dt.UTC)
    return events.raw_log(events.RawLog(run=run, stdout="", exit_code=0, started_at=now, ended_at=now), "test")


async def agent_keeping(bus: Bus, served: ServedAgent, *runs: events.RunSpec) -> service.Agent:
    """NODE's agent (not served) knowing the events stream, a log of each of `runs` kept in its outbox."""
    await bus.ensure_streams()
    agent = service.Agent(served.settings, served.bus)
    await agent.learn_stream()
    for run in runs:
        outbox.save(agent.state_dir, kept_log(run), agent.stream)
    return agent


async def test_a_flush_publishes_only_the_latest_attempt_of_a_run(
        served_agent: tuple[Bus, ServedAgent, Any], caplog: pytest.LogCaptureFixture) -> None:
    """Kept logs of attempts 1 and 2 of a run (their requests dead-lettered): the retry published both, two results of
    one planned run (review rO2). Now only the later; a run id of another submission is another run."""
    caplog.set_level(logging.INFO, logger="podtax")
    bus, served, _ = served_agent
    other = SUBMITTED + dt.timedelta(days=1)
    runs = [_run("r-1"), _run("r-1-a2").model_copy(update={"attempt": 2}), _run("s-1"),
            _run("s-1-a2", other).model_copy(update={"attempt": 2})]
    agent = await agent_keeping(bus, served, *runs)
    await keptlogs.flush(agent, "test")
    assert await stored(bus) == 3, "an earlier attempt's log published"
    assert outbox.kept(agent.state_dir) == [] and (agent.state_dir / "outbox" / "r-1.json.superseded").is_file()
    said = [r.getMessage() for r in caplog.records if "is not published: its later attempt" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("test: the kept log of run r-1 is not published: its later attempt "
                                                 "r-1-a2 is kept or was reported"), said


async def test_a_stop_ends_a_flush_of_the_kept_logs_while_nats_hangs(
        served_agent: tuple[Bus, ServedAgent, Any], nats_server: natsserver.NatsServer,
        caplog: pytest.LogCaptureFixture) -> None:
    """NATS hanging (SIGSTOP), the agent told to stop during a flush: every kept log after waited for NATS in turn
    (natsagain.Stopped caught as a failure: 30 logs took 15 s, 100+ passed systemd's 90 s). Now the flush ends."""
    caplog.set_level(logging.INFO, logger="podtax")
    bus, served, _ = served_agent
    agent = await agent_keeping(bus, served, *(_run(f"k-{i}") for i in range(5)))
    stop = asyncio.Event()
    watch_stop(stop)
    paused.pause(nats_server.proc.pid)
    try:
        flushing = asyncio.create_task(keptlogs.flush(agent, "test"))
        await asyncio.sleep(0.5)  # the first publish waits for NATS
        stop.set()
        with contextlib.suppress(Stopped):
            await asyncio.wait_for(flushing, 120)
    finally:
        os.kill(nats_server.proc.pid, signal.SIGCONT)
    tried = [r.getMessage() for r in caplog.records if "is still not published" in r.getMessage()]
    assert tried == [], tried
    assert len(outbox.kept(agent.state_dir)) == 5


async def test_the_retry_publishes_no_kept_log_into_a_stream_made_again(
        served_agent: tuple[Bus, ServedAgent, Any], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The events stream deleted and made again (NATS reset) while the agent runs: the retry published the log kept
    under the earlier one into the new one. Now it publishes none and says so once."""
    caplog.set_level(logging.INFO, logger="podtax")
    bus, served, _ = served_agent
    agent = await agent_keeping(bus, served, _run("r-1"))
    await bus.js.delete_stream(subjects.STREAM)
    await bus.ensure_streams()
    monkeypatch.setattr(outbox, "RETRY_S", 0.2)
    stop = asyncio.Event()
    retrying = asyncio.create_task(keptlogs.retry_loop(agent, stop))
    try:
        await wait_for(lambda: "NATS was reset" in caplog.text or not outbox.kept(agent.state_dir), 60, "the retry")
        await asyncio.sleep(1)  # a few retries more: said once
    finally:
        stop.set()
        await asyncio.wait_for(retrying, 60)
    assert await stored(bus) == 0 and outbox.kept(agent.state_dir) == ["r-1"]
    assert caplog.text.count("NATS was reset") == 1
