"""The runner refuses a control-plane run whose log may not fit NATS max_payload at dispatch too, not only at submission
(tests/controlplane/test_cp_log_size.py): a run that reaches the executor (resumed after a restart, or its campaign
accepted while NATS allowed more) is failed `log-too-large` before anything is made (ControlPlaneExecutor._run,
dispatch.too_large). Here the real executor, a real nats-server whose max_payload is 64 KiB and real kubesim: at
volume-churn's largest count the run is made and its log published; one object more and nothing is made; the same
count of pod-startup (500 bytes an object's line and 253 more for its node's name) is refused, naming its own."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax_kubesim import resources as R
from podtax_runner.controlplane import dispatch
from podtax_runner.controlplane.dispatch import ControlPlaneExecutor

from tests.controlplane.conftest import cluster, spec
from tests.integration.harness import nats_with_max_payload, wait_for

MAX_PAYLOAD = 65_536


@pytest.fixture
async def small_nats(tmp_path: Path) -> AsyncIterator[str]:
    with nats_with_max_payload(tmp_path, MAX_PAYLOAD) as url:
        yield url


async def test_a_run_whose_log_may_not_fit_is_refused_at_dispatch_before_anything_is_made(
        small_nats: str, kubesim_factory: Any) -> None:
    sim = kubesim_factory(cluster(), kubelet="simulated")
    made: list[str] = []
    for kind in (R.PVCS, R.PODS):
        sim.emulator.store.listen(kind, lambda ev: made.append(ev.obj["metadata"]["name"]) if ev.type == "ADDED"
                                  else None)
    bus = await Bus.connect(small_nats, "test")
    nc = await nats.connect(small_nats)
    seen: dict[str, dict[str, Any]] = {}  # run id -> its run.failed or run.log event's data

    async def record(msg: Any) -> None:
        data = json.loads(msg.data)["data"]
        seen[data["run"]["run_id"]] = {"subject": msg.subject, **data}

    reported: list[str] = []

    async def on_reported(run: events.RunSpec) -> None:
        reported.append(run.run_id)

    executor = None
    try:
        await bus.ensure_streams()
        await nc.subscribe(f"{subjects.RUN_FAILED}.>", cb=record)
        await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=record)
        settings = config.load(config.RunnerSettings, nats_url=small_nats, runner_kubeconfig=sim.kubeconfig)
        executor = ControlPlaneExecutor(settings, bus)
        executor.on_reported = on_reported
        volumes, pods = dispatch.max_count(MAX_PAYLOAD, "volume-churn"), dispatch.max_count(MAX_PAYLOAD, "pod-startup")
        assert bus.nc.max_payload == MAX_PAYLOAD and 0 < pods < volumes, (bus.nc.max_payload, pods, volumes)
        runs = {"over": spec("volume-churn", count=volumes + 1, concurrency=10, rep=0),
                "pods": spec("pod-startup", count=volumes, concurrency=10, rep=1),
                "fits": spec("volume-churn", count=volumes, concurrency=10, rep=2)}
        for run in runs.values():
            executor.launch(run)
        await wait_for(lambda: len(reported) == 3 and len(seen) == 3, 120, "the three runs reported")
        over, refused_pods, fits = (seen[r.run_id] for r in runs.values())
        for failed, test, count, largest in ((over, "volume-churn", volumes + 1, volumes),
                                             (refused_pods, "pod-startup", volumes, pods)):
            assert failed["subject"].startswith(subjects.RUN_FAILED) and failed["reason"] == "log-too-large", failed
            assert f"a {test} run of {count} objects" in failed["detail"], failed["detail"]
            assert f"lower count to {largest:,} or raise max_payload" in failed["detail"], failed["detail"]
        # the run at the largest count was made and its log fitted; the refused ones made nothing (no claim, no pod)
        assert fits["subject"].startswith(subjects.RUN_LOG), fits.get("detail")
        assert len(fits["stdout"].splitlines()) == volumes + 2
        assert len(made) == volumes and all(name.startswith("podtax-vc-") for name in made), made
    finally:
        if executor is not None:
            await executor.close()
        await nc.close()
        await bus.close()
