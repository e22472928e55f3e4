"""nats-server killed and started again (its store kept) while a starting host agent makes its consumer of campaign
cancellations. The request went to the server that died; nats-py reconnected within 2 s and timed it out on the new,
live connection, which cancels_subscription took for NATS permissions older than the agent: the agent stopped (exit
3) with 'NATS refuses this agent's consumer of campaign cancellations ...: its permissions are older than this
agent; regenerate and apply deploy/k8s/nats-auth.conf', a fix for a fault that was not there. Now a request whose
connection was made again meanwhile is made again on the new connection."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from podtax import config, natsserver
from podtax.bus import Bus
from podtax_host_agent import service

from tests.paused import pause


async def _subscribed_during_restart(server: natsserver.NatsServer, tmp_path: Path) -> str:
    bus = await Bus.connect(server.url, "test/agent")
    again = None
    try:
        await bus.ensure_streams()
        settings = config.load(config.HostAgentSettings, nats_url=server.url, agent_node="n1",
                               agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
        agent = service.Agent(settings, bus)
        await asyncio.to_thread(pause, server.proc.pid)  # the consumer's request is sent and never answered
        making = asyncio.create_task(service.cancels_subscription(agent))
        await asyncio.sleep(1)
        server.proc.kill()
        await asyncio.to_thread(server.proc.wait)
        again = await asyncio.to_thread(natsserver.start, server.store_dir, server.port,
                                        log_file=tmp_path / "nats2.log")
        try:
            sub = await making
        except Exception as exc:  # noqa: BLE001 - what the agent would stop with
            return f"{type(exc).__name__}: {exc}"
        return f"subscribed to {(await sub.consumer_info()).name}"
    finally:
        await bus.close()
        if again is not None:
            again.stop()


def test_the_cancels_consumer_is_made_again_after_a_nats_restart(nats_server: natsserver.NatsServer,
                                                                 tmp_path: Path) -> None:
    try:
        got = asyncio.run(_subscribed_during_restart(nats_server, tmp_path))
    finally:
        if nats_server.proc.poll() is None:
            nats_server.proc.send_signal(signal.SIGCONT)
    assert got.startswith("subscribed to "), got
