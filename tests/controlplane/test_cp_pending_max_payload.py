"""A pending DELETE_REFUSED result (controlplane/pending.py) whose raw log is above the max_payload of the NATS server
a starting runner meets (an admin lowered it, or a server of another configuration took over) stays pending, said in
one error naming the size to raise max_payload to; the runner goes on, and a runner starting once max_payload is
raised sends it: nothing is lost.

Before (stop 54's note, probed here): send_pending sent it as any report, the publish raised BusError ('... above the
server's max_payload of 6000; lower the output cap (PODTAX_AGENT_OUTPUT_CAP_BYTES) or raise max_payload') and the
outbox took it for NATS away: 'could not publish its timeline (...): NATS stopped or restarting? held, sending it
again in 10 s' every 10 s for as long as the runner ran, naming an agent setting that has nothing to do with it.
Real nats-server (restarted on its port and store with max_payload 6000, then without), kubesim (RBAC's 403 on
delete), runner, parser and DuckDB analyzer."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from podtax import natsserver
from podtax_runner.controlplane.pending import SUFFIX
from podtax_runner.service import serve

from tests.controlplane.conftest import cluster
from tests.controlplane.test_cp_delete_refused_restart import QUERY, set_max_msg_size
from tests.controlplane.test_cp_measured_retention import campaign, runner_settings, submit
from tests.integration.harness import services, wait_for

SMALL = 6000  # the failure (~3 KB) fits, the timeline of 20 objects does not


class Server:
    """A nats-server restarted on its port and store, with or without a max_payload."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp, self.port = tmp_path, natsserver.free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.server: natsserver.NatsServer | None = None

    def start(self, max_payload: int | None = None) -> None:
        if self.server is not None:
            self.server.stop()
        conf = None
        if max_payload is not None:
            conf = self.tmp / "nats.conf"
            conf.write_text(f"max_payload: {max_payload}\n")
        self.server = natsserver.start(self.tmp / "jetstream", self.port, self.tmp / "nats.log", config=conf)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path)
    s.start()
    try:
        yield s
    finally:
        s.stop()


async def test_a_pending_result_above_max_payload_stays_pending_said_once_and_is_sent_once_it_is_raised(
        server: Server, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="podtax.runner")
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {"forbid": ["delete persistentvolumeclaims"]}},
                          kubelet="none")
    spool = tmp_path / "spool"
    measured = spool / "measured"
    monkeypatch.setenv("PODTAX_NATS_URL", server.url)
    async with services(server.url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        await s.start("runner", serve, runner_settings(s, sim, spool))
        await set_max_msg_size(server.url, SMALL)  # NATS takes the failure, not the result: it stays pending
        await submit(tmp_path, campaign("cp-late", 20))
        await wait_for(lambda: [r[0] for r in s.query(QUERY)] == ["failed"], 90, "the run's failure stored")
        await wait_for(lambda: "NATS refuses its timeline" in caplog.text, 30, "the result not taken")
        await s.crash(next(t for t in s.tasks if t.get_name() == "runner"))
        mark, = (p for p in measured.iterdir() if p.name.endswith(SUFFIX))
        kept = mark.with_name(mark.name.removesuffix(SUFFIX))
        await set_max_msg_size(server.url, -1)
        server.start(max_payload=SMALL)  # the server comes back with a lower max_payload
        caplog.clear()
        await s.start("runner", serve, runner_settings(s, sim, spool))
        said = await wait_for(lambda: [r for r in caplog.records if "above NATS max_payload" in r.getMessage()], 30,
                              "the pending result said too large")
        message = said[0].getMessage()
        assert said[0].levelno == logging.ERROR and str(mark) in message, message
        assert f"above NATS max_payload ({SMALL:,})" in message and "raise max_payload in nats-server to at least " \
            in message and "kept pending" in message, message
        assert "could not publish its timeline" not in caplog.text, caplog.text  # not taken for NATS away
        assert "PODTAX_AGENT_OUTPUT_CAP_BYTES" not in caplog.text, caplog.text
        assert mark.exists() and kept.exists()
        await s.crash(next(t for t in s.tasks if t.get_name() == "runner"))
        size = int(message.split("to at least ")[1].split()[0].replace(",", ""))
        server.start(max_payload=size)  # raised as said: the next runner sends it
        await s.start("runner", serve, runner_settings(s, sim, spool))
        await wait_for(lambda: [r[0] for r in s.query(QUERY)] == ["ok"], 60, "the DELETE_REFUSED result stored")
        await wait_for(lambda: not mark.exists(), 30, "the mark gone")
    assert f"kept in {kept} by an earlier runner, go as a result flagged DELETE_REFUSED" in caplog.text
