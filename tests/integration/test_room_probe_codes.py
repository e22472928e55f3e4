"""The runner's look at the server's storage and `campaign status`'s are one (natsroom.refused: one key, one set of
codes; review r1 of dd86f35, L5). The runner's own copy counted any 'store failed' refusal (bus.FULL, 10077) of its
probe as the server's storage used up, so a limit an admin set on the runner's bucket held every run due from expiring
for as long as it lasted, said as 'NATS refuses writes for want of room', while reports (in the events stream) had
room. Real nats-server."""

from __future__ import annotations

from podtax import natsroom, natsserver, subjects
from podtax.bus import FULL, Bus
from podtax_runner import fullness


async def test_the_buckets_own_limit_is_not_the_servers_storage_used_up(nats_server: natsserver.NatsServer) -> None:
    bus = await Bus.connect(nats_server.url, "test")
    try:
        await bus.ensure_streams(max_bytes=100_000)
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        await kv.put("something", b"x")
        info = await bus.js.stream_info(f"KV_{subjects.RUNNER_BUCKET}")
        info.config.max_msgs = info.state.messages  # the bucket at a limit an admin set (discard new: refused)
        await bus.js.update_stream(info.config)
        try:
            await kv.put("another", b"x")
        except Exception as exc:  # noqa: BLE001 - what the probe gets too
            assert getattr(exc, "err_code", None) == FULL, exc
        else:
            raise AssertionError("the bucket took a write past its limit")
        room = fullness.Room(bus, kv, lambda: 0.0)
        await room._look_at_storage()
        assert room.storage == "" and not room.unknown(), room.storage  # before: 'NATS refuses writes for want ...'
        assert await natsroom.refusal(kv) == ""  # `campaign status` says nothing either
    finally:
        await bus.close()
