"""nats-server killed and started again (its store kept) while the scheduler asks for its scores bucket. The request
went to the server that died; nats-py reconnected within 2 s and timed it out on the new, live connection, which
NatsSide._bucket let through ("NATS gone meanwhile is waited out", but the connection was up again): the scheduler
stopped, serve() raising nats-py's TimeoutError. Now a request whose connection was made again meanwhile is made
again on the new connection."""

from __future__ import annotations

import asyncio
from pathlib import Path

from podtax import config, natsserver, subjects
from podtax.bus import Bus
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.service import NatsSide

from tests.paused import asked_during_restart


async def _bucket_during_restart(server: natsserver.NatsServer, tmp_path: Path) -> str:
    bus = await Bus.connect(server.url, "test/scheduler")
    try:
        await bus.ensure_streams()
        await bus.kv(subjects.SCORES_BUCKET)  # the analyzer's, made before
        settings = config.load(config.SchedulerSettings, nats_url=server.url)
        side = NatsSide(settings, bus, ScoreStore(settings.cluster, settings.scheduler_score_env), asyncio.Event())
        asking = await asked_during_restart(server, tmp_path / "nats2.log", side._bucket)
        try:
            kv = await asking
        except Exception as exc:  # noqa: BLE001 - what stopped the scheduler
            return f"{type(exc).__name__}: {exc}"
        return f"bucket {kv._name if kv else None}"
    finally:
        await bus.close()


def test_the_scores_bucket_is_asked_for_again_after_a_nats_restart(nats_server: natsserver.NatsServer,
                                                                   tmp_path: Path) -> None:
    got = asyncio.run(_bucket_during_restart(nats_server, tmp_path))
    assert got == f"bucket {subjects.SCORES_BUCKET}", got
