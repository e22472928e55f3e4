"""A service creating podtax's streams while its NATS cluster has fewer JetStream servers ready than the replicas
(PODTAX_NATS_REPLICAS=3; a cluster still forming, a server restarting) is refused 'no suitable peers for placement'.
That refusal was taken for 'made meanwhile by another service', then read 'this NATS user may not create it: start
podtax-runner first' (the fault drill's failure under load; the runner itself would have waited for itself forever).
Now the create is tried again until the servers are there, and a cluster that stays short is named with the setting.
Real nats-servers: three clustered on loopback, two started."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

import nats
import pytest
from podtax import busstreams, subjects
from podtax.bus import Bus, BusError

from tests.faults.cluster import NatsCluster


async def two_of_three(root: Path) -> NatsCluster:
    """The cluster with servers 1 and 2 running (a meta leader, two JetStream servers: R3 has no room)."""
    cluster = NatsCluster(root)
    cluster.start(0)
    cluster.start(1)
    deadline = time.monotonic() + 30
    for port in cluster.ports[:2]:
        while True:
            with contextlib.suppress(Exception):
                nc = await nats.connect(f"nats://127.0.0.1:{port}", connect_timeout=1, max_reconnect_attempts=0)
                try:
                    if await nc.jetstream().account_info():
                        break
                finally:
                    await nc.close()
            assert time.monotonic() < deadline, "two of three NATS servers formed no cluster within 30 s"
            await asyncio.sleep(0.3)
    return cluster


@pytest.fixture
def replicas3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_REPLICAS", "3")


async def test_streams_are_made_once_the_third_server_is_there(tmp_path: Path, replicas3: None,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    cluster = await two_of_three(tmp_path)
    try:
        bus = await Bus.connect(",".join(f"nats://127.0.0.1:{p}" for p in cluster.ports[:2]), "test")
        try:
            with caplog.at_level(logging.WARNING, logger="podtax.bus"):
                making = asyncio.create_task(bus.ensure_streams())
                await asyncio.sleep(1.5)
                assert not making.done(), making  # refused so far: waiting, not failed
                cluster.start(2)
                await asyncio.wait_for(making, busstreams.PLACEMENT_WAIT_S)
            info = await bus.js.stream_info(subjects.STREAM)
            assert info.config.num_replicas == 3
            said = [r.getMessage() for r in caplog.records]
            assert any("fewer JetStream servers ready than its 3 replicas" in s for s in said), said
            assert not any("may not create" in s for s in said), said
        finally:
            await bus.close()
    finally:
        cluster.stop()


async def test_a_cluster_that_stays_short_is_named_with_the_setting(tmp_path: Path, replicas3: None,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(busstreams, "PLACEMENT_WAIT_S", 1.0)
    cluster = await two_of_three(tmp_path)
    try:
        bus = await Bus.connect(",".join(f"nats://127.0.0.1:{p}" for p in cluster.ports[:2]), "test")
        try:
            with pytest.raises(BusError) as err:
                await bus.ensure_streams()
            assert "PODTAX_NATS_REPLICAS" in str(err.value) and "may not create" not in str(err.value)
            with pytest.raises(BusError) as err:
                await bus.kv(subjects.RUNNER_BUCKET)
            assert str(err.value).startswith(f"KV bucket {subjects.RUNNER_BUCKET}: ")
            assert "PODTAX_NATS_REPLICAS" in str(err.value)
        finally:
            await bus.close()
    finally:
        cluster.stop()


async def test_a_replicated_bucket_is_handed_over_once_it_has_a_leader(tmp_path: Path, replicas3: None) -> None:
    """A new R3 stream answers publishes 'no response from stream' until its servers elect a leader: the fault drill's
    first puts into the bucket it had just made failed so under load (CI). `kv()` now returns once the bucket's
    stream has a leader; while it has none (two of three servers down: no quorum) the wait goes on."""
    cluster = NatsCluster(tmp_path)
    cluster.start()
    try:
        await cluster.wait_ready()
        bus = await Bus.connect(cluster.url, "test")
        try:
            await bus.kv(subjects.RUNNER_BUCKET)
            info = await bus.js.stream_info(f"KV_{subjects.RUNNER_BUCKET}")
            assert info.cluster is not None and info.cluster.leader, info.cluster
            await bus.kv_put_many(subjects.RUNNER_BUCKET, [(f"k{i}", b"v") for i in range(20)])
            # The leader and one other go: the one left cannot elect itself (no quorum). A leader left alone would
            # go on naming itself until it notices it lost its quorum (seconds later): a CI run failed so.
            leader = int(info.cluster.leader.removeprefix("s")) - 1
            gone = [leader, (leader + 1) % 3]
            for i in gone:
                cluster.kill(i)
            waiting = asyncio.create_task(bus._led(f"KV_{subjects.RUNNER_BUCKET}", "KV bucket x", None))
            # Puts while the stream has no leader are answered 'no response from stream' (nothing was stored): they
            # are made again until it has one, within kv_put_many's timeout. They failed at once before: a CI run's
            # puts right after the leader was named met such a moment (a leader stepping down, routes still forming).
            left = [i for i in range(3) if i not in gone][0]
            other = await Bus.connect(f"nats://127.0.0.1:{cluster.ports[left]}", "test")
            try:
                putting = asyncio.create_task(other.kv_put_many(subjects.RUNNER_BUCKET,
                                                                [(f"k{i}", b"x") for i in range(20)], timeout=120))
                await asyncio.sleep(2)
                assert not waiting.done(), "handed over without a leader (one server of three: no quorum)"
                assert not putting.done(), putting
                cluster.start(gone[1])
                await asyncio.wait_for(waiting, busstreams.PLACEMENT_WAIT_S)
                await asyncio.wait_for(putting, 120)
            finally:
                await other.close()
            kv = await bus.kv(subjects.RUNNER_BUCKET)
            assert (await kv.get("k19")).value == b"x"
            await bus.kv_put_many(subjects.RUNNER_BUCKET, [(f"k{i}", b"w") for i in range(20)])
        finally:
            await bus.close()
    finally:
        cluster.stop()
