"""A real nats-server with the users and permissions `podtax up` generates (natsauth), connections as a role, and
whether a publish is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from podtax import config, localauth, natsauth, natsserver
from podtax.bus import Bus
from podtax.config import Common

NODE = "n1"  # the node of the host agent's user (natsauth.node_user)


@pytest.fixture(name="secured")
def secured_fixture(tmp_path: Path) -> Iterator[tuple[natsserver.NatsServer, dict[str, str]]]:
    users, conf = localauth.nats_users(tmp_path, NODE)
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log", config=conf)
    yield server, users
    server.stop()


async def connect(server: natsserver.NatsServer, users: dict[str, str], role: str) -> Bus:
    """A connection as `role`'s user: the host agent's is NODE's (or name the user, `host_agent.<node>`)."""
    user = natsauth.node_user(NODE) if role == natsauth.HOST_AGENT else role
    settings = config.load(Common, nats_url=server.url, nats_user=user, nats_password=users[user])
    return await Bus.connect(server.url, f"test/{role}", auth=natsauth.connect_options(settings))


@pytest.fixture(name="buses")
async def buses_fixture(secured) -> AsyncIterator[dict[str, Bus]]:  # type: ignore[no-untyped-def]
    """A connection as each service role, the streams made by the runner."""
    server, users = secured
    out = {role: await connect(server, users, role) for role in ("parser", "analyzer", "runner", "host_agent", "cli")}
    await out["runner"].ensure_streams(10 * 2**20, 3600)
    yield out
    for bus in out.values():
        await bus.close()


async def refused(bus: Bus, subject: str) -> bool:
    try:
        await bus.js.publish(subject, b"{}", timeout=1.0)
    except (NatsTimeout, NoRespondersError, TimeoutError):
        return True
    return False
