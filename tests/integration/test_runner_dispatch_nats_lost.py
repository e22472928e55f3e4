"""NATS restarted with an empty store at the moment the runner dispatches (the store-lost mid-campaign drill on a
loaded machine: the dispatch that follows a run's outcome can fall on the very moment): the save of the runs in
flight fails on NATS's side (no stream takes the puts: none is acked within the save's bound). The runner logged
it with the whole traceback ('could not record ... as in flight'), beside the 'NATS lost' line the service stops
with. Now a NATS-side failure is one line (its type and message) and the node is released as before; any other
failure keeps its traceback. Real nats-server, an in-process runner."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from podtax import events, natsserver
from podtax.bus import Bus
from podtax_runner import service

from tests.integration.harness import wait_for
from tests.integration.test_runner_faults import planned_runner


def _runner_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("podtax.runner") and r.levelno >= logging.WARNING]


async def test_a_dispatch_into_a_lost_store_is_one_line_and_releases_the_node(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "SAVE_TIMEOUT_S", 2.0)
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    bus = await Bus.connect(server.url, "test/runner")
    try:
        runner, state = await planned_runner(bus, server.url, "lost", ["n1"])
        server.stop()
        shutil.rmtree(tmp_path / "js")
        server = natsserver.start(tmp_path / "js", server.port, log_file=tmp_path / "nats.log")
        await wait_for(lambda: bus.nc.is_connected, 30, "the runner's connection to the new server")
        with caplog.at_level(logging.INFO):
            await runner.tick(events.now())
        assert state.in_flight("n1") is None and state.counts()["dispatched"] == 0, "the node is not blocked"
        lines = _runner_lines(caplog)
        assert [r.getMessage().split(":")[0] for r in lines] == ["could not record 1 runs of lost as in flight; "
                                                                 "released their nodes"], lines
        assert lines[0].exc_info is None, "one line, no traceback"
    finally:
        await bus.close()
        server.stop()

