"""`podtax campaign status`'s look at NATS's room is a write (cli.room, natsroom): review r1 of dd86f35. A read-only
user (or one of no podtax role) was refused it at every status: a permissions-violation warning on stderr, an error
line in the server's log, 1 s more per call; and `--follow` wrote at every poll. Now only a user whose role may write
the runner's bucket (or a connection of no user, on a server without authorization) looks, and `--follow` looks once,
then only while the state has not changed for STILL_POLLS polls. Real nats-server (with the generated users and a
read-only one) and runner state; the CLI as a process for what it prints."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from podtax import config, natsauth, natsroom, natsserver
from podtax.bus import Bus
from podtax.cli import campaign as cli_campaign
from podtax.cli import room
from podtax.cli.main import main as cli

from tests.integration.test_runner_no_expiry_without_room import spec
from tests.integration.test_runner_own_events_refused import runner_of

VIEWER = ('    {user: "viewer", password: "pw-viewer", permissions: {"publish": {"allow": ["$JS.API.INFO", '
          '"$JS.API.STREAM.INFO.*", "$JS.API.STREAM.NAMES", "$JS.API.DIRECT.GET.>", "$JS.API.STREAM.MSG.GET.*", '
          '"$JS.API.CONSUMER.>"]}, "subscribe": {"allow": ["_INBOX.>"]}}}\n')  # reads the runner's bucket only


def status_as(server: natsserver.NatsServer, user: str, name: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PODTAX_NATS_URL=server.url, PODTAX_NATS_USER=user, PODTAX_NATS_PASSWORD=f"pw-{user}")
    return subprocess.run([sys.executable, "-m", "podtax.cli.main", "campaign", "status", name], env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_read_only_user_gets_the_status_without_a_refused_write(tmp_path: Path) -> None:
    users = {role: f"pw-{role}" for role in natsauth.SERVICE_ROLES}
    conf = tmp_path / "auth.conf"
    conf.write_text(natsauth.authorization_block(users).replace("  ]\n}", VIEWER + "  ]\n}"))
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log", config=conf)
    try:
        async def active_campaign() -> None:
            settings = config.load(config.Common, nats_url=server.url, nats_user="runner", nats_password="pw-runner")
            bus = await Bus.connect(server.url, "test/runner", auth=natsauth.connect_options(settings))
            try:
                await runner_of(bus, spec("st"))
            finally:
                await bus.close()

        asyncio.run(active_campaign())
        viewer, writer = status_as(server, "viewer", "st"), status_as(server, "cli", "st")
    finally:
        server.stop()
    assert viewer.returncode == 0 and "campaign st: running" in viewer.stdout, viewer
    assert viewer.stderr == "", viewer.stderr  # before: 'NATS: nats: permissions violation for publish to ...'
    assert writer.returncode == 0 and writer.stderr == "", writer
    log = (tmp_path / "nats.log").read_text()
    assert "Violation" not in log, [line for line in log.splitlines() if "Violation" in line]


async def test_follow_looks_once_then_only_while_the_state_stands_still(
        nats_server: natsserver.NatsServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    bus = await Bus.connect(nats_server.url, "test")
    reads: list[int] = []
    looks: list[int] = []
    real_get, real_refusal = cli_campaign._kv_get, natsroom.refusal

    async def counted_get(*args: Any) -> Any:
        reads.append(1)
        return await real_get(*args)

    async def counted_refusal(*args: Any) -> str:
        looks.append(len(reads))
        return await real_refusal(*args)

    monkeypatch.setattr(cli_campaign, "_kv_get", counted_get)
    monkeypatch.setattr(natsroom, "refusal", counted_refusal)
    try:
        await runner_of(bus, spec("st"))  # a campaign that runs, its state unchanged (no agent)
        code = await asyncio.to_thread(cli, ["campaign", "status", "st", "--follow", "--timeout", "8"])
    finally:
        await bus.close()
    assert code == 1  # gave up following: the campaign goes on
    assert len(reads) >= 4, reads
    # the first read, then every STILL_POLLS-th poll of an unchanged state (before: one look at every read)
    assert looks == [n for n in range(1, len(reads) + 1) if n == 1 or (n - 1) % room.STILL_POLLS == 0], (looks, reads)
