"""nats-server started again without its JetStream up yet (a clustered server before its JetStream is ready, here
a plain nats-server on the port for 2 s): a service looking its KV bucket up then got 'no responders' (503,
nats.js.errors.ServiceUnavailableError) at once and ended in a traceback, exit 1. A 'no responders' after the
connection was made again during the request is now asked again (natsagain.again_if_reconnected) until JetStream
answers."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

from podtax import natsagain, natsserver, subjects
from podtax.bus import Bus

from tests.paused import kill_nats, start_nats_again


async def _looked_up_before_jetstream(server: natsserver.NatsServer, tmp_path: Path) -> str:
    bus = await Bus.connect(server.url, "test/runner")
    plain = None
    try:
        await bus.ensure_streams()
        await bus.kv(subjects.RUNNER_BUCKET)  # there already, as after the runner's first start
        await asyncio.to_thread(kill_nats, server)
        looking = asyncio.create_task(bus.kv(subjects.RUNNER_BUCKET))  # sent once nats-py is back
        with (tmp_path / "plain.log").open("ab") as out:  # no -js: JetStream's API has no responders
            plain = subprocess.Popen([natsserver.binary(), "-a", "127.0.0.1", "-p", str(server.port)], stdout=out,
                                     stderr=subprocess.STDOUT)
        while bus.nc.stats["reconnects"] == 0 and not looking.done():
            await asyncio.sleep(0.05)
        await asyncio.sleep(2)
        plain.kill()
        await asyncio.to_thread(plain.wait)
        await asyncio.to_thread(start_nats_again, server, tmp_path / "nats2.log")
        try:
            kv = await looking
        except Exception as exc:  # noqa: BLE001 - what the service would end with
            return f"{type(exc).__name__}: {exc}"
        return f"bucket {(await kv.status()).bucket}"
    finally:
        await bus.close()
        if plain is not None and plain.poll() is None:
            plain.kill()
            plain.wait()


def test_a_bucket_looked_up_before_jetstream_is_back_is_found(nats_server: natsserver.NatsServer,
                                                              tmp_path: Path) -> None:
    got = asyncio.run(_looked_up_before_jetstream(nats_server, tmp_path))
    assert got == f"bucket {subjects.RUNNER_BUCKET}", got


async def _stopped_before_jetstream(server: natsserver.NatsServer, tmp_path: Path) -> tuple[str, float]:
    """The same lookup, the service told to stop (its SIGTERM event set) 1 s after nats-py is back on the server
    without JetStream: (what the lookup ended with, seconds from the stop to that end)."""
    bus = await Bus.connect(server.url, "test/runner")
    plain = None
    try:
        await bus.ensure_streams()
        await bus.kv(subjects.RUNNER_BUCKET)
        stop = asyncio.Event()
        natsagain.watch_stop(stop)  # what bus.stop_on_signals does in a service
        await asyncio.to_thread(kill_nats, server)
        looking = asyncio.create_task(bus.kv(subjects.RUNNER_BUCKET))
        with (tmp_path / "plain.log").open("ab") as out:
            plain = subprocess.Popen([natsserver.binary(), "-a", "127.0.0.1", "-p", str(server.port)], stdout=out,
                                     stderr=subprocess.STDOUT)
        while bus.nc.stats["reconnects"] == 0 and not looking.done():
            await asyncio.sleep(0.05)
        await asyncio.sleep(1)
        stopped_at = time.monotonic()
        stop.set()
        try:
            await asyncio.wait_for(looking, 15)
            return "found", time.monotonic() - stopped_at
        except TimeoutError:
            return "still asking", time.monotonic() - stopped_at
        except Exception as exc:  # noqa: BLE001 - what the service would end with
            return type(exc).__name__, time.monotonic() - stopped_at
    finally:
        await bus.close()
        if plain is not None and plain.poll() is None:
            plain.kill()
            plain.wait()


def test_a_stop_while_jetstream_is_not_back_ends_the_wait(nats_server: natsserver.NatsServer,
                                                        tmp_path: Path) -> None:
    """Review r11 of e6747261: the 'no responders' branch asked again every 0.5 s up to natsagain.WAIT_S (60 s)
    without looking at the stop event, so a SIGTERM then waited past Kubernetes' 30 s grace."""
    ended, after = asyncio.run(_stopped_before_jetstream(nats_server, tmp_path))
    assert ended == "Stopped", (ended, after)
    assert after < 5, after
