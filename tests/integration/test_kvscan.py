"""kvscan.entries reads every live key of a pattern from a real nats-server, whatever nats-py's
early "initial values done" marker says (it can come before any value when the server has pushed
everything already: a restarted runner once resumed a campaign with no runs)."""

from __future__ import annotations

import asyncio

from podtax import kvscan
from podtax.bus import Bus


async def test_entries_are_every_live_key_of_the_pattern(nats_url: str) -> None:
    bus = await Bus.connect(nats_url, "test")
    try:
        kv = await bus.kv("scan")
        await bus.kv_put_many("scan", [(f"run.c1.{i:05d}", f"v{i}".encode()) for i in range(3000)])
        await bus.kv_put_many("scan", [(f"run.c2.{i:05d}", b"other") for i in range(50)])
        for i in range(0, 3000, 100):
            await kv.delete(f"run.c1.{i:05d}")
        await kv.put("run.c1.00005", b"newer")
        for _ in range(5):  # repeated, as the race depends on timing
            found = dict(await kvscan.entries(kv, "run.c1.*"))
            assert len(found) == 3000 - 30
            assert found["run.c1.00005"] == b"newer" and "run.c1.00100" not in found
        assert len(await kvscan.entries(kv, "run.c2.>", keys_only=True)) == 50
        assert await kvscan.entries(kv, "run.none.*") == []
        await kv.delete("run.c2.00000")
        gone = [f"run.c3.{i}" for i in range(3)]
        await bus.kv_put_many("scan", [(k, b"x") for k in gone])
        for k in gone:
            await kv.delete(k)
        assert await kvscan.entries(kv, "run.c3.*") == []  # only delete markers left
        assert await Bus.kv_keys(kv, "run.c2.") == [f"run.c2.{i:05d}" for i in range(1, 50)]
    finally:
        await bus.close()


async def test_concurrent_readers_agree(nats_url: str) -> None:
    bus = await Bus.connect(nats_url, "test")
    try:
        kv = await bus.kv("scan2")
        await bus.kv_put_many("scan2", [(f"k.{i}", b"1") for i in range(2000)])
        results = await asyncio.gather(*(kvscan.entries(kv, "k.*") for _ in range(8)))
        assert all(len(r) == 2000 for r in results)
    finally:
        await bus.close()
