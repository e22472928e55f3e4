"""A service of another podtax version than the NATS permissions (each role's inbox is `_INBOX_<role>`; an older
client uses `_INBOX`): the server refuses its reply inbox and every JetStream request timed out, so a host agent
upgraded apart from the cluster's NATS stopped with a bare `TimeoutError nats: timeout`. It is one BusError now."""

from __future__ import annotations

import pytest
from podtax import config, natsauth, natsserver
from podtax.bus import Bus, BusError

from tests.integration.secured import connect, secured_fixture  # noqa: F401 - fixture


async def test_an_inbox_of_another_version_says_what_to_do(
        secured: tuple[natsserver.NatsServer, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    server, users = secured
    runner = await connect(server, users, "runner")
    await runner.ensure_streams(10 * 2**20, 3600)
    monkeypatch.setattr(natsauth, "inbox_prefix", lambda user: "_INBOX")  # the version before
    settings = config.load(config.Common, nats_url=server.url, nats_user="host_agent.n1",
                           nats_password=users["host_agent.n1"])
    agent = await Bus.connect(server.url, "test/old-agent", auth=natsauth.connect_options(settings))
    try:
        with pytest.raises(BusError, match=r"reply inbox .*permissions violation.*different podtax versions.*"
                                           r"host agent included"):
            await agent.ensure_streams(10 * 2**20, 3600, wait=True)
    finally:
        await agent.close()
        await runner.close()


async def test_a_command_whose_first_request_is_a_bucket_says_it_too(
        secured: tuple[natsserver.NatsServer, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """`podtax campaign status`, `import` and the demo ask for the runner's bucket first (reviewer hR2)."""
    server, users = secured
    runner = await connect(server, users, "runner")
    await runner.kv("podtax_runner")
    monkeypatch.setattr(natsauth, "inbox_prefix", lambda user: "_INBOX")  # the version before
    settings = config.load(config.Common, nats_url=server.url, nats_user="cli", nats_password=users["cli"])
    cli = await Bus.connect(server.url, "test/old-cli", auth=natsauth.connect_options(settings))
    try:
        with pytest.raises(BusError, match=r"reply inbox .*permissions violation.*different podtax versions"):
            await cli.kv("podtax_runner")
    finally:
        await cli.close()
        await runner.close()
