"""A real nats-server with the users and permissions `podtax up` generates (natsauth), and connections as a role."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax import config, localauth, natsauth, natsserver
from podtax.bus import Bus
from podtax.config import Common


@pytest.fixture(name="secured")
def secured_fixture(tmp_path: Path) -> Iterator[tuple[natsserver.NatsServer, dict[str, str]]]:
    users, conf = localauth.nats_users(tmp_path)
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log", config=conf)
    yield server, users
    server.stop()


async def connect(server: natsserver.NatsServer, users: dict[str, str], role: str) -> Bus:
    settings = config.load(Common, nats_url=server.url, nats_user=role, nats_password=users[role])
    return await Bus.connect(server.url, f"test/{role}", auth=natsauth.connect_options(settings))
