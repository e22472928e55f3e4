"""Fixtures for end-to-end scheduler tests: the Kubernetes emulator, NATS scores, a running scheduler."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from podtax import subjects
from podtax.bus import Bus
from podtax.events import NodeScore

Obj = dict[str, Any]


def put_scores(nats_url: str, scores: list[NodeScore]) -> None:
    """Write scores into the real podtax_scores KV bucket, as the analyzer does."""
    async def main() -> None:
        bus = await Bus.connect(nats_url, "test")
        try:
            kv = await bus.kv(subjects.SCORES_BUCKET)
            for s in scores:
                key = subjects.score_key(s.cluster, s.env, s.node, s.test, s.metric, s.params_key)
                await kv.put(key, s.model_dump_json().encode())
        finally:
            await bus.close()

    asyncio.run(main())


@pytest.fixture
def sim_factory() -> Iterator[Callable[..., Any]]:
    from podtax_kubesim import testing

    sims: list[Any] = []

    def make(cluster: Obj, kubelet: str = "none") -> Any:
        sim = testing.start(cluster, kubelet=kubelet)
        sims.append(sim)
        return sim

    yield make
    for sim in sims:
        sim.stop()


@pytest.fixture
def scheduler_factory(nats_url: str) -> Iterator[Callable[..., Any]]:
    from podtax_scheduler.service import Background, SchedulerConfig

    running: list[Background] = []

    def make(kubeconfig: Path, **overrides: Any) -> Background:
        opts: dict[str, Any] = {"nats_url": nats_url, "scheduler_kubeconfig": kubeconfig,
                                "scheduler_metrics_port": 0, "scheduler_leader_elect": False,
                                "log_format": "text"}
        opts.update(overrides)
        bg = Background(SchedulerConfig(**opts)).start()
        running.append(bg)
        return bg

    yield make
    for bg in running:
        bg.stop()


def events_for(sim: Any, pod: str, namespace: str = "default") -> list[Obj]:
    return [e for e in sim.objects("events", namespace)
            if (e.get("involvedObject") or {}).get("name") == pod
            and e.get("reportingComponent") == "benchmark-scheduler"]


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=1, default=str)
