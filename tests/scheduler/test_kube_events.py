"""Connection reuse of the Kubernetes client wrapper and the aggregating event recorder, against the
Kubernetes API emulator (tools/kubesim)."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_scheduler.kube import Kube, api_client
from podtax_scheduler.leader import LeaderElector, LeaseConfig
from podtax_scheduler.recorder import EventRecorder, PodEvent, TokenBucket

from tests.scheduler.sched_objects import pod


def _cluster() -> dict[str, Any]:
    return {"nodes": [{"name": "a"}]}


def _connections(kube: Kube) -> int:
    """TCP connections the client's urllib3 pools have opened so far."""
    return sum(p.num_connections for p in kube.api.rest_client.pool_manager.pools._container.values())


@pytest.fixture
def kube(sim_factory: Any) -> tuple[Any, Kube]:
    sim = sim_factory(_cluster())
    return sim, Kube(api_client(sim.kubeconfig, pool=4))


def test_binds_events_and_patches_reuse_one_connection(kube: tuple[Any, Kube]) -> None:
    sim, k = kube
    for i in range(20):
        created = sim.create(pod(f"p{i}"))
        uid = created["metadata"]["uid"]
        assert k.bind("default", f"p{i}", uid, "a")
        name = k.event("default", f"p{i}", uid, "Scheduled", "ok")
        k.bump_event("default", name, 2)
        k.mark_not_scheduled("default", f"p{i}", "Unschedulable", "test")
    assert _connections(k) == 1  # 80 requests, one TCP connection: every response was read and released
    assert sim.get("events", name, "default")["count"] == 2


def test_leader_election_reads_and_releases_its_responses(kube: tuple[Any, Kube]) -> None:
    _, k = kube
    elector = LeaderElector(k.api, "me", LeaseConfig(namespace="default", name="sched", lease_duration_s=5,
                                                     renew_deadline_s=4, retry_period_s=1))
    for _ in range(10):
        assert elector.try_acquire_or_renew()
    elector._leader = True
    elector.release()
    assert _connections(k) == 1


class _Sink:
    def __init__(self) -> None:
        self.created: list[PodEvent] = []
        self.bumped: list[tuple[str, str, int]] = []

    def create(self, ev: PodEvent) -> str:
        self.created.append(ev)
        return f"{ev.pod}.{len(self.created)}"

    def bump(self, namespace: str, name: str, count: int) -> None:
        self.bumped.append((namespace, name, count))


@pytest.mark.parametrize(("events", "qps_burst", "created", "bumped", "dropped"), [
    # the same FailedScheduling of one pod five times: one Event, count raised four times
    ([("p", "u1", "FailedScheduling", "0/3 nodes", "Warning")] * 5, (0.0, 1), 1, 4, 0),
    # a burst of 10 Scheduled Events with a budget of 3 that never refills (qps 0): 3 written, 7 dropped
    ([(f"p{i}", f"u{i}", "Scheduled", "ok", "Normal") for i in range(10)], (0.0, 3), 3, 0, 7),
    # Warning events are never rate-limited
    ([(f"p{i}", f"u{i}", "FailedScheduling", "no", "Warning") for i in range(10)], (0.0, 1), 10, 0, 0),
    # different messages for one pod are different Events
    ([("p", "u", "FailedScheduling", f"m{i}", "Warning") for i in range(3)], (0.0, 1), 3, 0, 0),
])
def test_recorder_aggregates_like_the_event_broadcaster(events: list[tuple[str, ...]], qps_burst: tuple[float, int],
                                                        created: int, bumped: int, dropped: int) -> None:
    sink = _Sink()
    rec = EventRecorder(sink.create, sink.bump, qps=qps_burst[0], burst=qps_burst[1])
    for name, uid, reason, message, type_ in events:
        rec.write(PodEvent("default", name, uid, reason, message, type_=type_))
    assert (len(sink.created), len(sink.bumped), rec.dropped) == (created, bumped, dropped)
    if bumped:
        assert [c for _, _, c in sink.bumped] == list(range(2, 2 + bumped))


@pytest.mark.parametrize(("qps", "burst", "normal"), [
    (0.0, 1000, 200),  # all within the burst
    (20.0, 2, 6),  # 4 wait for their tokens in the writer's backlog when stop comes: written too
])
def test_recorder_thread_writes_everything_queued_before_stop(qps: float, burst: int, normal: int) -> None:
    sink = _Sink()
    rec = EventRecorder(sink.create, sink.bump, qps=qps, burst=burst)
    rec.start()
    for i in range(normal):
        rec.record(PodEvent("default", f"p{i}", f"u{i}", "Scheduled", "ok"))
    rec.record(PodEvent("default", "q", "uq", "FailedScheduling", "no", type_="Warning"))
    rec.stop()
    assert sorted(e.pod for e in sink.created) == sorted([f"p{i}" for i in range(normal)] + ["q"])
    assert rec.dropped == 0 and not rec.waiting


def test_a_burst_of_scheduled_events_waits_for_tokens_and_loses_none() -> None:
    """200 pods bound at once with the default budget (50/s, burst 100): before, 100 Events were written and the
    other 100 dropped (a pod with no Scheduled Event); now each waits for its token, as client-go's rate limiter
    makes a request wait: all 200 written, the last ~2 s (of the fake clock) after the first, never more than the
    budget allows in any second."""
    now = [0.0]
    sink = _Sink()
    stamps: list[float] = []

    def create(ev: PodEvent) -> str:
        stamps.append(now[0])
        return sink.create(ev)

    def sleep(seconds: float) -> None:
        assert seconds > 0
        now[0] += seconds

    rec = EventRecorder(create, sink.bump, clock=lambda: now[0], sleep=sleep)
    for i in range(200):
        rec.write(PodEvent("default", f"p{i}", f"u{i}", "Scheduled", "ok"))
    assert (len(sink.created), rec.dropped) == (200, 0)
    assert stamps[99] == 0.0 and 1.9 < stamps[-1] < 2.1
    assert all(sum(1 for t in stamps if start <= t < start + 1.0) <= 100 + 50 for start in stamps)


def test_a_warning_is_written_at_once_while_scheduled_events_wait_for_their_tokens() -> None:
    """The writer thread's step (take_in, release) with a fake clock: a FailedScheduling after a burst of Scheduled
    Events is written at once, not after every waiting Normal one (the reviewer's repro: 20 s late after 1,100
    binds when one thread waited in line); the waiting ones follow as tokens come, oldest first, none dropped."""
    now = [0.0]
    sink = _Sink()
    rec = EventRecorder(sink.create, sink.bump, qps=1.0, burst=2, clock=lambda: now[0])
    for i in range(5):
        rec.take_in(PodEvent("default", f"p{i}", f"u{i}", "Scheduled", "ok"))
    rec.take_in(PodEvent("default", "q", "uq", "FailedScheduling", "0/3 nodes", type_="Warning"))
    rec.take_in(PodEvent("default", "p0", "u0", "Scheduled", "ok"))  # a repeat only raises a count: at once
    assert [e.pod for e in sink.created] == ["p0", "p1", "q"] and sink.bumped == [("default", "p0.1", 2)]
    assert [e.pod for e in rec.waiting] == ["p2", "p3", "p4"]
    now[0] = 1.0
    rec.release()
    assert [e.pod for e in sink.created] == ["p0", "p1", "q", "p2"]
    now[0] = 3.0
    rec.release()
    assert [e.pod for e in sink.created][4:] == ["p3", "p4"] and not rec.waiting and rec.dropped == 0


def test_events_left_unwritten_at_stop_are_counted_as_dropped() -> None:
    """stop() gave up after its timeout with Scheduled Events still waiting for tokens, and counted none as dropped
    (review hR2: 174 left, dropped 0)."""
    sink = _Sink()
    rec = EventRecorder(sink.create, sink.bump, qps=1.0, burst=1)
    rec.start()
    for i in range(5):
        rec.record(PodEvent("default", f"p{i}", f"u{i}", "Scheduled", "ok"))
    rec.stop(timeout=0.2)
    assert rec.dropped >= 1, (rec.dropped, len(sink.created))


def test_token_bucket_refills() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=2.0, burst=2, clock=lambda: now[0])
    assert [bucket.take() for _ in range(3)] == [True, True, False]
    now[0] = 0.5
    assert [bucket.take(), bucket.take()] == [True, False]


def test_the_clients_credential_refresh_runs_once_a_second_not_before_every_request(
        sim_factory: Any, kubeconfig_sets: list[int]) -> None:
    """The client ran the kubeconfig's credential refresh before every request: it set the token, host and proxy
    on the configuration again (the host's setter reading the proxy environment), ~0.09 ms of CPU a request, two
    requests a pod (issue 15's scheduler CPU per pod). Now at most once every REFRESH_S (here an hour)."""
    sim = sim_factory(_cluster())
    k = Kube(api_client(sim.kubeconfig, pool=4))
    for i in range(10):
        uid = sim.create(pod(f"p{i}"))["metadata"]["uid"]
        assert k.bind("default", f"p{i}", uid, "a")  # the token is there: the API server takes the request
        k.event("default", f"p{i}", uid, "Scheduled", "ok")
    assert kubeconfig_sets[0] == 2, kubeconfig_sets  # loading the kubeconfig, then the first refresh (before: 21)
    assert [p["spec"]["nodeName"] for p in sim.objects("pods", "default")] == ["a"] * 10
