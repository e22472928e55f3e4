"""A run's timeline must fit its raw-log event in one NATS message, or the run is lost once done (log-too-large,
after every object was made and timed). The runner refuses, before anything is made, a count whose log may not fit
(dispatch.too_large, at submission and at dispatch); its estimate was 400 bytes an object, below what a run writes
with no retry at all (450-481 encoded on Kubernetes) and far below one whose every call was sent again (HELD: the
first attempt's time kept, the summary's `retried` naming each). Here a throttled run through real kubesim
(failCreates: each claim's first create answered 500, some consumer pods refused 422 within the allowance) writes
no more than the estimate, which the old one did not hold."""

from __future__ import annotations

import re
from typing import Any

import pytest
from podtax import config, events, subjects
from podtax.bus import Bus, Permanent
from podtax_runner.controlplane import dispatch
from podtax_runner.service import Runner

from tests.controlplane.conftest import cluster, spec
from tests.faults.drill import seed_nodes

COUNT = 40


def encoded(run: events.RunSpec, stdout: str) -> int:
    """The bytes of the run's raw-log event as the runner publishes it (dispatch._run)."""
    raw = events.RawLog(run=run, stdout=stdout, exit_code=0, started_at=events.now(), ended_at=events.now())
    return len(events.encode(events.raw_log(raw, dispatch.SOURCE).model_copy(update={"id": f"{run.run_id}.log"})))


def test_a_run_whose_every_create_was_sent_again_fits_the_estimate(kubesim_factory: Any, run_cp: Any) -> None:
    # each claim (-0001 ... -0040) its own fault: its first create answered 500, so every claim is sent again once
    # whatever the order its threads come in (one shared fault of `times: COUNT` was met twice by some claims and
    # never by others under load: a retried count the thread scheduler decided)
    claims = [{"match": f"persistentvolumeclaims/-{i:04d}", "status": 500, "times": 1} for i in range(1, COUNT + 1)]
    faults = {"failCreates": [*claims, {"match": "pods/1", "status": 422, "times": 0}]}  # 4 consumers: -0001, -0011 ...
    sim = kubesim_factory({**cluster(), "faults": faults}, kubelet="simulated")
    run = spec("volume-churn", count=COUNT, concurrency=COUNT, timeout=120, consumer=True, campaign="a" * 40)
    tl = run_cp(run, kube=sim)
    assert len(tl.retried) == COUNT and tl.errors() == 4, (len(tl.retried), tl.errors())
    size = encoded(run, tl.jsonl())
    assert size <= dispatch.log_bytes(COUNT), (size, dispatch.log_bytes(COUNT))
    assert size > COUNT * 400 + dispatch.FIXED_BYTES // 4, size  # the old estimate's 400 an object did not hold


def test_the_refusal_names_the_count_that_fits() -> None:
    limit = dispatch.max_count(1_048_576)
    assert dispatch.log_bytes(limit) <= 1_048_576 < dispatch.log_bytes(limit + 1)
    assert dispatch.too_large(limit, 1_048_576) is None
    why = dispatch.too_large(limit + 1, 1_048_576)
    assert why and f"lower count to {limit:,} or raise max_payload in nats-server" in why, why


async def test_a_campaign_whose_run_may_not_fit_is_refused_at_submission(nats_url: str) -> None:
    """Through a real nats-server (its default max_payload, 1 MiB) and the runner's submission handler: count 1,500
    passed the old check (600,000 bytes at 400 an object) and could be lost once run; it is refused before anything
    is planned, naming the count that fits."""
    bus = await Bus.connect(nats_url, "test")
    try:
        await bus.ensure_streams()
        await seed_nodes(bus, ["n1"])
        settings = config.load(config.RunnerSettings, nats_url=nats_url, runner_kubernetes=False)
        runner = Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), None)
        spec_ = {"name": "near", "nodes": ["n1"], "environments": ["kubernetes"], "repetitions": {"min": 1, "max": 1},
                 "tests": [{"test": "volume-churn", "params": {"count": 1500}}]}
        fits = dispatch.max_count(bus.nc.max_payload)
        with pytest.raises(Permanent, match=re.escape(f"lower count to {fits:,} or raise max_payload")):
            await runner.on_campaign(events.campaign_submitted(events.CampaignSubmitted(campaign="near", spec=spec_)))
        assert bus.nc.max_payload == 1_048_576 and bus.nc.max_payload > 1500 * 400 and fits < 1500
    finally:
        await bus.close()
