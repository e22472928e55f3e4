"""The scheduler started before the analyzer (and the runner) on a NATS with podtax's users: its user may not make
the scores bucket nor the streams. Before, it waited for them before even listing pods: opted-in pods stayed Pending
with no Event and only a NATS 'waiting' line in its log. Now it places them by resources alone meanwhile, says so in
one log line and in each benchmark pod's BenchmarkUnmeasured Event (naming the bucket and who makes it), and ranks
by scores once the analyzer has made the bucket. Real nats-server with natsauth's users, kubesim, real scheduler."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
from typing import Any

import pytest
from podtax import natsserver, subjects
from podtax_scheduler.service import Background, SchedulerConfig

from tests.integration.secured import connect, secured_fixture  # noqa: F401 - fixture
from tests.scheduler.conftest import events_for
from tests.scheduler.sched_objects import pod, score

NODE = {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}


def _bound(sim: Any, name: str) -> str:
    return sim.wait_for(lambda: ((sim.get("pods", name, "default") or {}).get("spec") or {}).get("nodeName"),
                        timeout=15)


def _as_role(secured: tuple[natsserver.NatsServer, dict[str, str]], role: str, work: Any) -> None:
    async def main() -> None:
        bus = await connect(*secured, role)
        try:
            await work(bus)
        finally:
            await bus.close()

    asyncio.run(main())


def test_pods_are_placed_and_told_while_the_scores_bucket_does_not_exist(
        secured: tuple[natsserver.NatsServer, dict[str, str]], sim_factory: Any, scheduler_factory: Any,
        caplog: Any) -> None:
    server, users = secured
    sim = sim_factory({"nodes": [{**NODE, "name": n} for n in ("a", "b")]})
    with caplog.at_level(logging.INFO, logger="podtax.scheduler"):
        bg = scheduler_factory(sim.kubeconfig, nats_url=server.url, nats_user="scheduler",
                               nats_password=users["scheduler"])
        sim.create(pod("early", cpu="100m"))
        assert _bound(sim, "early") in ("a", "b")
    told = sim.wait_for(lambda: [e for e in events_for(sim, "early") if e["reason"] == "BenchmarkUnmeasured"])
    assert told[0]["type"] == "Warning"
    assert told[0]["message"].startswith(f"no benchmark scores to rank by: KV bucket {subjects.SCORES_BUCKET} does "
                                         "not exist yet, and this NATS user may not create it (podtax-analyzer "
                                         "does): start podtax-analyzer first; placed by resources alone"), told
    said = [r.getMessage() for r in caplog.records if "placed by resources alone" in r.getMessage()]
    assert len(said) == 1 and f"KV bucket {subjects.SCORES_BUCKET} does not exist yet" in said[0], said

    async def analyzer(bus: Any) -> None:  # the analyzer starts: it makes the bucket and publishes scores
        kv = await bus.kv(subjects.SCORES_BUCKET)
        for s in (score("a", 100, 20), score("b", 300, 20)):
            await kv.put(subjects.score_key(s.cluster, s.env, s.node, s.test, s.metric, s.params_key),
                         s.model_dump_json().encode())

    _as_role(secured, "analyzer", analyzer)
    sim.wait_for(lambda: bg.scheduler.store.updates >= 2, timeout=15)
    sim.create(pod("late", cpu="100m"))
    assert _bound(sim, "late") == "b"
    said = sim.wait_for(lambda: events_for(sim, "late"))  # written by the event recorder, after the bind
    assert [e["reason"] for e in said] == ["Scheduled"]


def test_nats_without_jetstream_stops_the_scheduler_with_its_error(sim_factory: Any, tmp_path: Any) -> None:
    # the streams and the bucket are now waited for beside the scheduling: what they raise must still stop the
    # scheduler with its error (as when it came before the scheduler started), not leave it running without scores
    port = natsserver.free_port()
    proc = subprocess.Popen([natsserver.binary(), "-a", "127.0.0.1", "-p", str(port)],  # no -js
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sim = sim_factory({"nodes": [{**NODE, "name": "a"}]})
        url = f"nats://127.0.0.1:{port}"
        sim.wait_for(lambda: proc.poll() is not None or _listens(port))
        bg = Background(SchedulerConfig(nats_url=url, scheduler_kubeconfig=sim.kubeconfig, scheduler_metrics_port=0,
                                        scheduler_leader_elect=False, log_format="text"))
        with pytest.raises(Exception) as raised:  # noqa: PT011 - nats-py's own error for JetStream missing
            bg.start()
        bg.stop()
        assert "scheduler did not start" not in str(raised.value)
        assert bg.scheduler is None  # it never scheduled without its scores
    finally:
        proc.terminate()
        proc.wait(10)


def _listens(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
