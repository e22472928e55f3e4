"""End to end: the scheduler against the Kubernetes emulator and a real nats-server."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

from tests.scheduler.conftest import events_for, put_scores
from tests.scheduler.sched_objects import pod, score

NODE = {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}


def nodes(*specs: dict[str, Any]) -> dict[str, Any]:
    return {"nodes": [{**NODE, **s} for s in specs]}


def bound_node(sim: Any, name: str, namespace: str = "default", timeout: float = 10) -> str:
    return sim.wait_for(lambda: (sim.get("pods", name, namespace) or {}).get("spec", {}).get("nodeName"),
                        timeout=timeout)


def test_pods_land_on_best_scoring_node(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    sim = sim_factory(nodes({"name": "a"}, {"name": "b"}, {"name": "c"}))
    put_scores(nats_url, [score("a", 100, 20), score("b", 300, 20), score("c", 200, 20)])
    bg = scheduler_factory(sim.kubeconfig)
    sim.create(pod("p1", cpu="100m"))
    assert bound_node(sim, "p1") == "b"
    ev = sim.wait_for(lambda: events_for(sim, "p1"))
    assert ev[0]["reason"] == "Scheduled" and ev[0]["message"].startswith("Successfully assigned default/p1 to b; ")
    assert "ranked by sysbench-cpu events_per_second [threads=1] (median per run" in ev[0]["message"]
    port = bg.scheduler.metrics.port
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert "podtax_scheduler_bindings_total 1.0" in text
    assert "podtax_scheduler_scheduling_duration_seconds_count 1.0" in text


def test_broken_nodes_are_never_chosen(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    sim = sim_factory(nodes(
        {"name": "ok", "capacity": {"cpu": "32", "memory": "64Gi", "pods": "110"}},
        {"name": "cordoned"},
        {"name": "notready", "conditions": [{"type": "Ready", "status": "False"}]},
        {"name": "tainted", "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
        {"name": "full", "capacity": {"cpu": "1", "memory": "8Gi", "pods": "110"}},
        {"name": "arm", "arch": "arm64"},
    ))
    sim.cordon("cordoned")
    # every broken node measured far better than the healthy one
    put_scores(nats_url, [score("ok", 1, 50)] + [score(n, 1000, 50) for n in
                                                  ("cordoned", "notready", "tainted", "full", "arm")])
    scheduler_factory(sim.kubeconfig)
    for i in range(12):
        sim.create(pod(f"p{i}", cpu="1500m", labels={"podtax.io/arch": "amd64"}))
    assert {bound_node(sim, f"p{i}") for i in range(12)} == {"ok"}


def test_prototype_trap_picks_the_faster_node(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    sim = sim_factory(nodes({"name": "node-a"}, {"name": "node-b"}))
    put_scores(nats_url, [score("node-a", 7.78e6, 160, test="stress-ng-cpu", metric="bogo_ops_per_second_real"),
                          score("node-b", 8.65e6, 112, test="stress-ng-cpu", metric="bogo_ops_per_second_real")])
    scheduler_factory(sim.kubeconfig)
    for i in range(5):
        sim.create(pod(f"p{i}", test="stress-ng-cpu"))
    assert {bound_node(sim, f"p{i}") for i in range(5)} == {"node-b"}


def test_new_score_changes_the_next_placement(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    sim = sim_factory(nodes({"name": "a"}, {"name": "b"}))
    put_scores(nats_url, [score("a", 100, 20), score("b", 200, 20)])
    bg = scheduler_factory(sim.kubeconfig)
    sim.create(pod("first"))
    assert bound_node(sim, "first") == "b"
    before = bg.scheduler.store.updates
    put_scores(nats_url, [score("a", 400, 20)])
    sim.wait_for(lambda: bg.scheduler.store.updates > before)  # raises if the watch never brings it (how soon: bench)
    sim.create(pod("second"))
    assert bound_node(sim, "second") == "a"


def test_scores_of_other_clusters_and_host_env_are_ignored(sim_factory: Any, scheduler_factory: Any,
                                                           nats_url: str) -> None:
    sim = sim_factory(nodes({"name": "a"}, {"name": "b"}))
    put_scores(nats_url, [score("a", 100, 20), score("b", 50, 20),
                          score("b", 9999, 20, cluster="elsewhere"), score("b", 9999, 20, env="host")])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p"))
    assert bound_node(sim, "p") == "a"


def test_pods_of_other_schedulers_are_never_touched(sim_factory: Any, scheduler_factory: Any,
                                                    nats_url: str) -> None:
    sim = sim_factory({**nodes({"name": "a"}), "namespaces": ["team-a"]})
    scheduler_factory(sim.kubeconfig, scheduler_namespaces="team-a")
    sim.create(pod("other", scheduler="some-other-scheduler"))
    sim.create(pod("default-ns"))  # ours by name, but outside the configured namespaces
    sim.create(pod("mine", namespace="team-a"), namespace="team-a")
    assert bound_node(sim, "mine", "team-a") == "a"
    time.sleep(0.5)
    for name in ("other", "default-ns"):
        obj = sim.get("pods", name, "default")
        assert not obj["spec"].get("nodeName")
        assert events_for(sim, name) == []
        assert not [c for c in obj["status"].get("conditions") or [] if c.get("reason") == "Unschedulable"]


def test_a_scheduler_name_that_is_no_dns_name_is_taken_as_kubernetes_takes_it(sim_factory: Any,
                                                                               scheduler_factory: Any) -> None:
    """Kubernetes checks no pod's schedulerName (ValidatePodSpec) and kube-scheduler only that its own is not empty,
    so a pod can carry 'Team A': PODTAX_SCHEDULER_NAME takes it too (refusing it would leave such pods unbound), and
    the emulator creates the pod as the API server does."""
    sim = sim_factory(nodes({"name": "a"}))
    scheduler_factory(sim.kubeconfig, scheduler_name="Team A")
    sim.create(pod("other"))  # benchmark-scheduler's, no longer ours
    sim.create(pod("mine", scheduler="Team A"))
    assert bound_node(sim, "mine") == "a"
    assert not sim.get("pods", "other", "default")["spec"].get("nodeName")


def test_failed_scheduling_is_explained_then_retried(sim_factory: Any, scheduler_factory: Any,
                                                     nats_url: str) -> None:
    sim = sim_factory(nodes({"name": "c1"}, {"name": "c2"}, {"name": "s1"}, {"name": "s2"}, {"name": "s3"}))
    sim.cordon("c1")
    sim.cordon("c2")
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("big", cpu="6"))
    ev = sim.wait_for(lambda: [e for e in events_for(sim, "big") if e["reason"] == "FailedScheduling"])
    assert ev[0]["message"] == "0/5 nodes are available: 2 node(s) were unschedulable, 3 Insufficient cpu."
    assert ev[0]["type"] == "Warning"
    cond = sim.wait_for(lambda: [c for c in sim.get("pods", "big", "default")["status"].get("conditions") or []
                                 if c["type"] == "PodScheduled" and c["status"] == "False"])
    assert cond[0]["reason"] == "Unschedulable"
    sim.add_node({"name": "large", "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}})
    assert bound_node(sim, "big", timeout=15) == "large"


def test_two_replicas_never_double_bind(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    sim = sim_factory(nodes(*({"name": f"n{i}"} for i in range(4))))
    put_scores(nats_url, [score(f"n{i}", 100 + i, 20) for i in range(4)])
    lease = {"scheduler_leader_elect": True, "scheduler_lease_duration_s": 2.0,
             "scheduler_renew_deadline_s": 1.5, "scheduler_retry_period_s": 0.3}
    r1 = scheduler_factory(sim.kubeconfig, scheduler_identity="replica-1", **lease)
    r2 = scheduler_factory(sim.kubeconfig, scheduler_identity="replica-2", **lease)
    for i in range(60):
        sim.create(pod(f"p{i}"))
    for i in range(60):
        bound_node(sim, f"p{i}", timeout=20)
    leaders = [r for r in (r1, r2) if r.scheduler.elector.is_leader()]
    assert len(leaders) == 1
    def binds() -> list[float]:  # each counter moves after its binding's answer, which the API server shows before
        return [r.scheduler.metrics.bindings._value.get() for r in (r1, r2)]

    sim.wait_for(lambda: sum(binds()) >= 60)
    assert sum(binds()) == 60 and min(binds()) == 0
    def scheduled_events() -> list[dict[str, Any]]:
        return [e for e in sim.objects("events", "default") if e["reason"] == "Scheduled"
                and e.get("reportingComponent") == "benchmark-scheduler"]

    scheduled = sim.wait_for(lambda: len(scheduled_events()) >= 60 and scheduled_events())  # written async
    assert len(scheduled) == 60 and len({e["involvedObject"]["name"] for e in scheduled}) == 60
    # the leader goes away (releasing its lease): the standby takes over
    leader = leaders[0]
    standby = r2 if leader is r1 else r1
    leader.stop()
    sim.create(pod("after"))
    assert bound_node(sim, "after", timeout=15)
    assert sim.wait_for(lambda: standby.scheduler.metrics.bindings._value.get() >= 1)


def test_placement_made_is_published(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    import asyncio

    from podtax import subjects
    from podtax.bus import Bus
    from podtax.events import decode

    sim = sim_factory(nodes({"name": "a"}, {"name": "b"}))
    put_scores(nats_url, [score("a", 10, 20), score("b", 20, 20)])
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p"))
    assert bound_node(sim, "p") == "b"

    async def last() -> Any:
        bus = await Bus.connect(nats_url, "test")
        try:
            for _ in range(50):
                try:
                    msg = await bus.js.get_last_msg(subjects.STREAM, subjects.join(subjects.PLACEMENT_MADE,
                                                                                   "default", "p"))
                    return decode(msg.data)
                except Exception:  # noqa: BLE001 - not there yet
                    await asyncio.sleep(0.1)
        finally:
            await bus.close()

    event = asyncio.run(last())
    assert event is not None and event.type == "podtax.placement.made.v1"
    assert event.data.node == "b" and event.data.test == "sysbench-cpu"
    assert [c.node for c in event.data.candidates] == ["b", "a"]
    assert event.data.candidates[0].score > event.data.candidates[1].score
    assert "events_per_second" in event.data.message


def test_cli_rejects_a_bad_profile(tmp_path: Any, capsys: Any) -> None:
    from podtax_scheduler.__main__ import main

    bad = tmp_path / "profile.yaml"
    bad.write_text("score:\n  BenchmarkScore: {weight: lots}\n")
    assert main(["--profile", str(bad)]) == 2
    assert "PODTAX_SCHEDULER_PROFILE" in capsys.readouterr().err


def test_watch_410_gone_leads_to_a_relist(sim_factory: Any, scheduler_factory: Any, nats_url: str) -> None:
    sim = sim_factory(nodes({"name": "a"}))
    bg = scheduler_factory(sim.kubeconfig)
    informer = bg.scheduler.pod_informer
    before = informer.relists
    sim.create(pod("noise", scheduler="some-other-scheduler"))
    sim.wait_for(lambda: informer._resp is not None)
    sim.compact()  # the watch history is gone: resuming from the last version gets 410
    informer._resp.shutdown()  # drop the stream, as a network blip would
    sim.wait_for(lambda: informer.relists > before, timeout=10)
    sim.create(pod("p"))
    assert bound_node(sim, "p") == "a"


def test_cli_schedules_and_stops_cleanly_on_sigterm(sim_factory: Any, nats_url: str, tmp_path: Any) -> None:
    import os
    import signal
    import subprocess
    import sys

    sim = sim_factory(nodes({"name": "a"}))
    log = tmp_path / "scheduler.log"
    env = dict(os.environ, PODTAX_NATS_URL=nats_url, PODTAX_SCHEDULER_KUBECONFIG=str(sim.kubeconfig),
               PODTAX_SCHEDULER_METRICS_PORT="0", PODTAX_LOG_FORMAT="text", PODTAX_SCHEDULER_IDENTITY="cli",
               PODTAX_SCHEDULER_RETRY_PERIOD_S="0.3")
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "podtax_scheduler"], env=env, stderr=err)
        try:
            sim.wait_for(lambda: "started" in log.read_text(), timeout=30)
            sim.create(pod("p"))
            assert bound_node(sim, "p") == "a"
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    lease = sim.get("leases", "benchmark-scheduler", "kube-system", group="coordination.k8s.io")
    assert lease is not None and not lease["spec"].get("holderIdentity")  # released on the way out
