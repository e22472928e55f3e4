"""`podtax-scheduler` (the real entry point, a child process) sent SIGTERM while it starts and its Kubernetes API
server does not answer: its informers' first lists wait for the server (Scheduler.start, up to its sync timeout of
60 s) in a thread the service awaited, so the SIGTERM went unseen (hF, session 56): the scheduler ran on until the
timeout, then ended with 'did not list ...' and a failure status (in Kubernetes, SIGKILLed at the end of the grace
period first). Now the start stops: a clean stop, exit 0."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from podtax import natsserver
from podtax_scheduler import service
from podtax_scheduler.scheduler import Scheduler

from tests.scheduler.test_health_port import NODE


def unanswered(sim_factory: Any, tmp_path: Path) -> Path:
    """A kubeconfig naming an API server that refuses connections."""
    sim = sim_factory({"nodes": [NODE]})
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_bytes(Path(sim.kubeconfig).read_bytes())
    sim.stop()
    return kubeconfig


def test_a_sigterm_while_the_api_server_does_not_answer_stops_the_scheduler(
        sim_factory: Any, nats_server: natsserver.NatsServer, tmp_path: Path) -> None:
    kubeconfig = unanswered(sim_factory, tmp_path)
    env = dict(os.environ, PODTAX_NATS_URL=nats_server.url, PODTAX_SCHEDULER_KUBECONFIG=str(kubeconfig),
               PODTAX_SCHEDULER_METRICS_PORT="0", PODTAX_SCHEDULER_LEADER_ELECT="false", PODTAX_LOG_FORMAT="text")
    log = tmp_path / "scheduler.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "podtax_scheduler"], env=env, stderr=out)
    try:
        deadline = time.monotonic() + 60  # a hang guard
        while "did not answer" not in log.read_text():  # the informers are retrying: the start waits for them
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)  # a hang guard, past the start's own 60 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = log.read_text()
    assert proc.returncode == 0, said
    assert "stopping while the informers wait for the API server" in said and "Traceback" not in said, said


def test_a_sigterm_as_the_sync_timeout_ends_is_a_stop(sim_factory: Any, nats_server: natsserver.NatsServer,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SIGTERM's handler set the stop event just before the start's 60 s ended in a TimeoutError: serve saw the
    start done first and raised it, a failure (rF, session 56); now a stop."""
    stop = asyncio.Event()
    loops: list[asyncio.AbstractEventLoop] = []

    def timed_out(self: Scheduler, sync_timeout_s: float = 60.0) -> None:
        loops[0].call_soon_threadsafe(stop.set)  # the SIGTERM, then the end of the sync timeout
        raise TimeoutError("the nodes informer did not sync within 60s")

    monkeypatch.setattr(Scheduler, "start", timed_out)
    settings = service.SchedulerConfig(nats_url=nats_server.url, scheduler_kubeconfig=unanswered(sim_factory, tmp_path),
                                       scheduler_metrics_port=0, scheduler_leader_elect=False, log_format="text")

    async def run() -> None:
        loops.append(asyncio.get_running_loop())
        await asyncio.wait_for(service.serve(settings, stop), 120)  # a hang guard

    asyncio.run(run())  # raised the TimeoutError


def test_a_stop_as_the_start_ends_leaves_nothing_running(sim_factory: Any, scheduler_factory: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """stop() run between the start's last look at the stop and what it starts: the start then started the event
    writer and the elector after stop() had stopped them, and they ran on (rF, session 56)."""
    real_start = Scheduler.start
    left: list[threading.Thread | None] = []

    def start_racing(self: Scheduler, sync_timeout_s: float = 60.0) -> None:
        stopper = threading.Thread(target=self.stop)
        informers = (self.node_informer, self.pod_informer, self.ns_informer)
        recorder_stopped = threading.Event()
        stop_recorder = self.recorder.stop

        def stopping_recorder(timeout: float = 10.0) -> None:
            stop_recorder(timeout)
            recorder_stopped.set()

        monkeypatch.setattr(self.recorder, "stop", stopping_recorder)

        class Racing(threading.Event):
            def is_set(inner) -> bool:  # noqa: N805
                seen = threading.Event.is_set(inner)  # what the start saw, stop() coming just after
                if stopper.ident is None and all(inf.synced.is_set() for inf in informers):  # start's last look
                    stopper.start()
                    # stop() past the event writer's stop; with the start's lock it waits for the start to end
                    recorder_stopped.wait(5)
                return seen

        self._stop = Racing()
        real_start(self, sync_timeout_s)
        stopper.join(60)  # a hang guard
        left.append(self.recorder._thread)

    monkeypatch.setattr(Scheduler, "start", start_racing)
    scheduler_factory(sim_factory({"nodes": [NODE]}).kubeconfig)
    assert left == [None]  # was [<Thread(event-writer, started daemon ...)>]: running after stop()
