"""nats-server killed and started again (its store kept) while the scheduler asks for its scores bucket. The request
went to the server that died; nats-py reconnected within 2 s and timed it out on the new, live connection, which
NatsSide._bucket let through ("NATS gone meanwhile is waited out", but the connection was up again): the scheduler
stopped, serve() raising nats-py's TimeoutError. Now a request whose connection was made again meanwhile is made
again on the new connection."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from podtax import config, natsserver, subjects
from podtax.bus import Bus
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.service import NatsSide

from tests.paused import pause


async def _bucket_during_restart(server: natsserver.NatsServer, tmp_path: Path) -> str:
    bus = await Bus.connect(server.url, "test/scheduler")
    again = None
    try:
        await bus.ensure_streams()
        await bus.kv(subjects.SCORES_BUCKET)  # the analyzer's, made before
        settings = config.load(config.SchedulerSettings, nats_url=server.url)
        side = NatsSide(settings, bus, ScoreStore(settings.cluster, settings.scheduler_score_env), asyncio.Event())
        await asyncio.to_thread(pause, server.proc.pid)  # the bucket's request is sent and never answered
        asking = asyncio.create_task(side._bucket())
        await asyncio.sleep(1)
        server.proc.kill()
        await asyncio.to_thread(server.proc.wait)
        again = await asyncio.to_thread(natsserver.start, server.store_dir, server.port,
                                        log_file=tmp_path / "nats2.log")
        try:
            kv = await asking
        except Exception as exc:  # noqa: BLE001 - what stopped the scheduler
            return f"{type(exc).__name__}: {exc}"
        return f"bucket {kv._name if kv else None}"
    finally:
        await bus.close()
        if again is not None:
            again.stop()


def test_the_scores_bucket_is_asked_for_again_after_a_nats_restart(nats_server: natsserver.NatsServer,
                                                                   tmp_path: Path) -> None:
    try:
        got = asyncio.run(_bucket_during_restart(nats_server, tmp_path))
    finally:
        if nats_server.proc.poll() is None:
            nats_server.proc.send_signal(signal.SIGCONT)
    assert got == f"bucket {subjects.SCORES_BUCKET}", got
