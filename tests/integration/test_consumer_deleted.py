"""A service's JetStream consumer deleted under it while NATS and its stream stay (`nats consumer rm PODTAX parser`
by an operator tidying up): the service stopped (exit 3) with 'NATS lost JetStream consumer parser ...: the NATS
server restarted with an empty store, or PODTAX_NATS_URL names another one', sending the operator after a restart
or a wrong address that never happened. Now that line says the consumer was deleted and its stream is there; the
store-lost wording stays for a stream gone too (test_nats_store_lost). Started again, the service makes its consumer
again. Real nats-server, the real parser process."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

from podtax import natsserver, subjects
from podtax.bus import Bus


def _parser(url: str, tmp: Path) -> subprocess.Popen[bytes]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": url,
           "PODTAX_LOG_FORMAT": "text", "PODTAX_HEALTH_PORT": "0"}
    with open(tmp / "parser.log", "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "podtax_parser"], env=env, stdout=out, stderr=subprocess.STDOUT)


async def _consumers(url: str, delete: bool) -> list[str]:
    """The PODTAX stream's consumers once there is one (60 s at most), deleted when `delete`."""
    bus = await Bus.connect(url, "test/consumer-deleted")
    try:
        await bus.ensure_streams()
        names: list[str] = []
        for _ in range(120):
            names = [c.name for c in await bus.js.consumers_info(subjects.STREAM)]
            if names:
                break
            await asyncio.sleep(0.5)
        for name in names if delete else []:
            await bus.js.delete_consumer(subjects.STREAM, name)
        return names
    finally:
        await bus.close()


async def _given_one(url: str) -> int:
    """Publish one (junk) run log and wait until the parser's consumer was given it (60 s at most); its sequence."""
    bus = await Bus.connect(url, "test/consumer-deleted")
    try:
        seq = (await bus.js.publish(f"{subjects.RUN_LOG}.test", b"not an event")).seq
        for _ in range(120):
            if (await bus.js.consumer_info(subjects.STREAM, "parser")).delivered.stream_seq >= seq:
                break
            await asyncio.sleep(0.5)
        return seq
    finally:
        await bus.close()


def test_a_deleted_consumer_is_named_so_and_made_again(tmp_path: Path) -> None:
    """Review r6 of acac6e4e: the line also says what the restart it advises costs (the consumer made again is given
    every message the stream holds, from the first), and up to which stream sequence this one had been given them."""
    nats = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    proc = again = None
    try:
        proc = _parser(nats.url, tmp_path)
        assert asyncio.run(_consumers(nats.url, delete=False)) == ["parser"]
        seq = asyncio.run(_given_one(nats.url))
        assert asyncio.run(_consumers(nats.url, delete=True)) == ["parser"]
        status = proc.wait(60)
        text = (tmp_path / "parser.log").read_text()
        lines = [line for line in text.splitlines() if "JetStream consumer parser" in line]
        assert status == 3 and "Traceback" not in text and len(lines) == 1, text
        assert "was deleted while this service ran" in lines[0] and "its stream PODTAX is there" in lines[0], lines
        assert "empty store" not in lines[0], lines
        assert "is given again every message the stream holds for it, from the first" in lines[0], lines
        assert f"it had been given up to stream sequence {seq})" in lines[0], lines
        again = _parser(nats.url, tmp_path)
        assert asyncio.run(_consumers(nats.url, delete=False)) == ["parser"]
        assert again.poll() is None
    finally:
        for p in (proc, again):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(15)
        nats.stop()


def test_a_store_lost_and_its_stream_made_again_is_not_named_a_deleted_consumer(tmp_path: Path) -> None:
    """Review r6 of acac6e4e: NATS restarted with an empty store and the PODTAX stream made again (a restarted runner
    under `podtax up` makes it at once) before the service's next fetch: the stream was there, so the line blamed
    `nats consumer rm`. A stream made after the consumer is a new one: the store-lost wording, as before acac6e4e."""
    from podtax.bus import NatsLost
    from podtax.busconsume import ConsumerSpec

    nats = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")

    async def main() -> str:
        nonlocal nats
        bus = await Bus.connect(nats.url, "test/store-lost")
        try:
            await bus.ensure_streams()
            spec = ConsumerSpec("parser", [f"{subjects.RUN_LOG}.>"])
            sub = await bus._subscribe(spec)
            nats.stop()
            shutil.rmtree(tmp_path / "js")
            nats = natsserver.start(tmp_path / "js", nats.port, log_file=tmp_path / "nats.log")
            other = await Bus.connect(nats.url, "test/runner-like")
            await other.ensure_streams()
            await other.close()
            for _ in range(120):  # the bus reconnects; then its fetch finds no consumer
                try:
                    await bus._fetch(sub, spec)
                except NatsLost as exc:
                    return str(exc)
                await asyncio.sleep(0.25)
            return "no NatsLost"
        finally:
            await bus.close()

    try:
        line = asyncio.run(main())
    finally:
        nats.stop()
    assert "restarted with an empty store" in line and "was deleted" not in line, line
