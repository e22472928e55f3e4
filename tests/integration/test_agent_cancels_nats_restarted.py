"""nats-server killed and started again (its store kept) while a starting host agent makes its consumer of campaign
cancellations. The request went to the server that died; nats-py reconnected within 2 s and timed it out on the new,
live connection, which cancels_subscription took for NATS permissions older than the agent: the agent stopped (exit
3) with 'NATS refuses this agent's consumer of campaign cancellations ...: its permissions are older than this
agent; regenerate and apply deploy/k8s/nats-auth.conf', a fix for a fault that was not there. Now a request whose
connection was made again meanwhile is made again on the new connection."""

from __future__ import annotations

import asyncio
from pathlib import Path

from podtax import config, natsserver
from podtax.bus import Bus
from podtax_host_agent import service

from tests.paused import asked_during_restart


async def _subscribed_during_restart(server: natsserver.NatsServer, tmp_path: Path) -> str:
    bus = await Bus.connect(server.url, "test/agent")
    try:
        await bus.ensure_streams()
        settings = config.load(config.HostAgentSettings, nats_url=server.url, agent_node="n1",
                               agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
        agent = service.Agent(settings, bus)
        making = await asked_during_restart(server, tmp_path / "nats2.log",  # sent and never answered
                                            lambda: service.cancels_subscription(agent))
        try:
            sub = await making
        except Exception as exc:  # noqa: BLE001 - what the agent would stop with
            return f"{type(exc).__name__}: {exc}"
        return f"subscribed to {(await sub.consumer_info()).name}"
    finally:
        await bus.close()


def test_the_cancels_consumer_is_made_again_after_a_nats_restart(nats_server: natsserver.NatsServer,
                                                                 tmp_path: Path) -> None:
    got = asyncio.run(_subscribed_during_restart(nats_server, tmp_path))
    assert got.startswith("subscribed to "), got
