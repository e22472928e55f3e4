"""NATS stopping while the runner reads its saved state at start (Runner.load), as when `podtax up` is killed under
load and its nats-server stops with it (helper hF, session 56: 2 of 3 kills). The read's request went unanswered,
timed out after 5 s and the runner ended in `RuntimeError: nats: timeout` and its traceback (exit 1). Now (saved.py):
nats-server restarted meanwhile is waited for and the state read again; a SIGTERM meanwhile is a clean stop (exit 0);
NATS that does not answer is one line naming its URL and what to do, exit 3 (as a NATS unreachable at start).
Real nats-server (paused with SIGSTOP, killed and started again), the real runner in this process and as a process."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from nats.aio.msg import Msg
from podtax import config, natsserver, subjects
from podtax.bus import Bus
from podtax_runner.service import Runner

from tests.faults.drill import RunnerProcess
from tests.integration.harness import wait_for
from tests.integration.test_runner_faults import planned_runner
from tests.paused import asked_during_restart, kill_nats, pause


async def _saved_campaign(url: str, more: int = 0) -> None:
    """A host campaign `saved` planned (2 repetitions on n1) and saved in the runner's bucket, as a runner leaves it,
    and `more` others (each 3 more requests of the runner's start)."""
    bus = await Bus.connect(url, "test/runner")
    try:
        for name in ["saved", *(f"more{i}" for i in range(more))]:
            await planned_runner(bus, url, name, ["n1"])
    finally:
        await bus.close()


async def _loaded_during_restart(server: natsserver.NatsServer, tmp_path: Path, delay_s: float) -> str:
    await _saved_campaign(server.url)
    bus = await Bus.connect(server.url, "test/runner")
    try:
        settings = config.load(config.RunnerSettings, nats_url=server.url, runner_kubernetes=False)
        runner = Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), None)
        try:
            await (await asked_during_restart(server, tmp_path / "nats2.log", runner.load, delay_s))
        except Exception as exc:  # noqa: BLE001 - what the runner would end with
            return f"{type(exc).__name__}: {exc}"
        return f"resumed {sorted(runner.campaigns)} with {len(runner.campaigns['saved'].runs)} runs"
    finally:
        await bus.close()


# back at once, or 3.5 s after the kill (a pod restart): nats-py, trying every 2 s, is then still away when the
# request times out (5 s). Before: 'RuntimeError: nats: timeout' both times
@pytest.mark.parametrize("delay_s", [0, 3.5])
def test_nats_restarted_while_the_runner_reads_its_state_is_waited_for(nats_server: natsserver.NatsServer,
                                                                       tmp_path: Path, delay_s: float) -> None:
    got = asyncio.run(_loaded_during_restart(nats_server, tmp_path, delay_s))
    assert got == "resumed ['saved'] with 2 runs", got


async def _reading_paused(server: natsserver.NatsServer, tmp_path: Path, sigterm: bool) -> tuple[int, str]:
    """The runner process started on the saved campaign, nats-server paused as the runner's first read of its bucket
    (a watch: a consumer of the bucket's stream) reaches it, and the runner told to stop (`sigterm`) or not: its exit
    status and log."""
    await _saved_campaign(server.url, more=20)  # the runner's start still reading when the pause takes hold
    watcher = await Bus.connect(server.url, "test/watcher")
    reached = asyncio.Event()

    async def seen(msg: Msg) -> None:  # SIGSTOP at once: the runner has several reads to make after this one
        if "KV_podtax_runner" in msg.subject and not reached.is_set():
            os.kill(server.proc.pid, signal.SIGSTOP)
            reached.set()

    await watcher.nc.subscribe("$JS.API.CONSUMER.>", cb=seen)
    await watcher.nc.flush()
    runner = RunnerProcess(server.url, tmp_path / "runner.log", PODTAX_HEALTH_PORT="0")
    runner.start()
    assert runner.proc is not None
    proc = runner.proc
    try:
        await wait_for(lambda: reached.is_set() or proc.poll() is not None, 60, "the runner's first read")
        await asyncio.to_thread(pause, server.proc.pid)  # every thread of nats-server stopped
        await watcher.close()
        if sigterm:
            proc.send_signal(signal.SIGTERM)
        await wait_for(lambda: proc.poll() is not None, 120, "the runner to stop")
        return proc.wait(), runner.log.read_text()
    finally:
        runner.kill()
        kill_nats(server)


def test_nats_not_answering_while_the_runner_reads_its_state_is_one_line_exit_3(
        nats_server: natsserver.NatsServer, tmp_path: Path) -> None:
    status, log = asyncio.run(_reading_paused(nats_server, tmp_path, sigterm=False))
    assert "resumed" not in log, log  # stopped in its start, not after
    assert "Traceback" not in log and status == 3, (status, log)  # before: 1, RuntimeError: nats: timeout
    assert f"NATS at {nats_server.url} did not answer while podtax-runner read its saved state" in log, log


def test_a_sigterm_while_nats_does_not_answer_the_runner_reading_its_state_is_a_clean_stop(
        nats_server: natsserver.NatsServer, tmp_path: Path) -> None:
    status, log = asyncio.run(_reading_paused(nats_server, tmp_path, sigterm=True))
    assert "resumed" not in log, log
    assert "Traceback" not in log and status == 0, (status, log)  # before: 1, RuntimeError: nats: timeout
    assert "stopped while waiting for NATS" in log, log
