"""A run's timeline must fit its raw-log event in one NATS message, or the run is lost once done (log-too-large,
after every object was made and timed). The runner refuses, before anything is made, a count whose log may not fit
(dispatch.too_large, at submission and at dispatch); its estimate was 400 bytes an object, below what a run writes
with no retry at all (450-481 encoded on Kubernetes) and far below one whose every call was sent again (HELD: the
first attempt's time kept, the summary's `retried` naming each). Here a throttled run through real kubesim
(failCreates: each claim's first create answered 500, some consumer pods refused 422 within the allowance) writes
no more than the estimate, which the old one did not hold. The bound is each template's: a pod-startup pod's line
holds its node's name (253 more bytes an object, tests/controlplane/test_cp_log_size_node.py), a volume's none; charged
to every template, it lowered volume-churn's largest count at 1 MiB from 1,174 to 913 for nothing."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
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
    assert size <= dispatch.log_bytes(COUNT, "volume-churn"), (size, dispatch.log_bytes(COUNT, "volume-churn"))
    assert size > COUNT * 400 + dispatch.FIXED_BYTES // 4, size  # the old estimate's 400 an object did not hold


@pytest.mark.parametrize("test,largest", [("volume-churn", 1_174), ("pod-startup", 882)])
def test_the_refusal_names_the_count_that_fits(test: str, largest: int) -> None:
    """Each template's largest count at 1 MiB: 500 bytes an object's line, and for a pod-startup pod's 253 more for its
    node's name and 40 for its end point ready_to_start_containers (volume-churn's was 913 too when every template was
    charged the name; pod-startup's was 913 before that end point)."""
    limit = dispatch.max_count(1_048_576, test)
    assert limit == largest
    assert dispatch.log_bytes(limit, test) <= 1_048_576 < dispatch.log_bytes(limit + 1, test)
    assert dispatch.too_large(limit, 1_048_576, test) is None
    why = dispatch.too_large(limit + 1, 1_048_576, test)
    assert why and f"a {test} run of {limit + 1} objects" in why, why
    assert f"lower count to {limit:,} or raise max_payload in nats-server" in why, why


@contextlib.asynccontextmanager
async def submissions(nats_url: str) -> AsyncIterator[tuple[Bus, Runner]]:
    """A real nats-server (its default max_payload, 1 MiB) and the runner's submission handler, node n1 known."""
    bus = await Bus.connect(nats_url, "test")
    try:
        await bus.ensure_streams()
        await seed_nodes(bus, ["n1"])
        settings = config.load(config.RunnerSettings, nats_url=nats_url, runner_kubernetes=False)
        yield bus, Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), None)
    finally:
        await bus.close()


def submitted(name: str, test: str, count: int) -> events.Event:
    spec_ = {"name": name, "nodes": ["n1"], "environments": ["kubernetes"], "repetitions": {"min": 1, "max": 1},
             "tests": [{"test": test, "params": {"count": count}}]}
    return events.campaign_submitted(events.CampaignSubmitted(campaign=name, spec=spec_))


async def test_a_campaign_whose_run_may_not_fit_is_refused_at_submission(nats_url: str) -> None:
    """Count 1,500 passed the old check (600,000 bytes at 400 an object) and could be lost once run; it is refused
    before anything is planned, naming the count that fits."""
    async with submissions(nats_url) as (bus, runner):
        fits = dispatch.max_count(bus.nc.max_payload, "volume-churn")
        with pytest.raises(Permanent, match=re.escape(f"lower count to {fits:,} or raise max_payload")):
            await runner.on_campaign(submitted("near", "volume-churn", 1500))
        assert bus.nc.max_payload == 1_048_576 and bus.nc.max_payload > 1500 * 400 and fits < 1500


async def test_each_template_is_bounded_by_its_own_line_at_submission(nats_url: str) -> None:
    """Count 1,000 of volume-churn fits 1 MiB (its lines hold no node name) and is planned; the same count of
    pod-startup (each pod's line may hold a node name of 253 characters) is refused, naming its own largest count.
    Before, both were refused at 913."""
    async with submissions(nats_url) as (bus, runner):
        await runner.on_campaign(submitted("volumes", "volume-churn", 1000))
        assert "volumes" in runner.campaigns
        with pytest.raises(Permanent, match=re.escape("a pod-startup run of 1000 objects")) as refused:
            await runner.on_campaign(submitted("pods", "pod-startup", 1000))
        assert "lower count to 882 or raise max_payload" in str(refused.value)
        assert bus.nc.max_payload == 1_048_576 and "pods" not in runner.campaigns
