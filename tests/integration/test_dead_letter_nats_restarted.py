"""A message dead-lettered just as nats-server dies and is started again (its store kept). The dead letter's publish
went to the server that died; nats-py reconnected within 2 s and timed the publish out on the new, live connection,
which dead_letter took for a refusal ("no answer on a live connection: permissions"): it logged 'could not
dead-letter ...; dropped it' and termed the message, so it was in neither the dead letters nor redelivered: lost
from sight (seen 2 of 2: once redelivered all the same, once not within 15 s). A publish whose connection was lost
and made again meanwhile is now made once more on the new connection (JetStream de-duplicates it by its id): the
dead letter is stored, then the message termed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from podtax import natsserver, subjects
from podtax.bus import Bus
from podtax.busconsume import ConsumerSpec

from tests.paused import asked_during_restart


async def _handled_during_restart(server: natsserver.NatsServer, tmp_path: Path) -> tuple[bool, int, int]:
    """(dead_letter raised, dead letters stored, deliveries of the message) for an undecodable message handled while
    nats-server is frozen, killed and started again."""
    bus = await Bus.connect(server.url, "test/dlq")
    try:
        await bus.ensure_streams()
        await bus.js.publish(f"{subjects.RUN_LOG}.host.n1", b"not an event")
        spec = ConsumerSpec("dlq-test", (f"{subjects.RUN_LOG}.>",), ack_wait_s=5)
        sub = await bus._subscribe(spec)
        [msg] = await sub.fetch(1, timeout=10)
        handling = await asked_during_restart(server, tmp_path / "nats2.log",  # the dead letter's publish
                                              lambda: bus.handle_message(spec, lambda event: asyncio.sleep(0), msg))
        try:
            await handling
            raised = False
        except Exception:  # noqa: BLE001 - NATS lost: the message is not acked
            raised = True
        for _ in range(100):  # connected again (the publish timed out on the new connection, or raised before)
            if bus.nc.is_connected:
                break
            await asyncio.sleep(0.1)
        stored = (await bus.js.stream_info(subjects.DLQ_STREAM)).state.messages
        back = 0
        if not stored:  # not dead-lettered: it must come back (termed, it never does)
            try:
                back = len(await sub.fetch(1, timeout=15))
            except TimeoutError:
                back = 0
        return raised, stored, back
    finally:
        await bus.close()


def test_a_dead_letter_lost_with_its_server_is_not_dropped(nats_server: natsserver.NatsServer,
                                                          tmp_path: Path) -> None:
    raised, stored, back = asyncio.run(_handled_during_restart(nats_server, tmp_path))
    assert (raised, stored) == (False, 1), f"raised {raised}, dead letters {stored}, delivered again {back}"
