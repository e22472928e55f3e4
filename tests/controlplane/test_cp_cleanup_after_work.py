"""A Kubernetes run whose work is done (measured) keeps its timeline when its end-of-run cleanup fails: the API
stopped (refused: Unreachable) or paused (no answer: a timed-out call, which execute turned into
kubernetes-no-answer) after the work. The reviewer of this stop: the run was failed and its complete timeline lost,
where Nomad's run (nvolumes._clean_run) logs the failure and records what stayed as left_behind. Against the real
kubesim in its own process (killed or paused with SIGSTOP), through the real runner and kubernetes client."""

from __future__ import annotations

import signal
from typing import Any

import pytest
from podtax_runner.controlplane import cleanup, common, execute, kubeapi

from tests.controlplane.conftest import cluster, spec
from tests.paused import pause

READ_S = 1.0  # a Kubernetes request's read timeout (60 s in a run; the same rule, shorter)


def _after_measured(monkeypatch: pytest.MonkeyPatch, then: Any) -> None:
    """Call `then` once the run has scraped its end-of-work counter, before its cleanup."""
    real = execute.server_count

    def server_count(scrape: Any, tl: Any) -> Any:
        measured = real(scrape, tl)

        def done() -> None:
            measured()
            then()

        return done

    monkeypatch.setattr(execute, "server_count", server_count)


CASES = {  # test, its params, the signal that takes the API away, the objects that stay
    "volume-churn, API paused": ("volume-churn", {"count": 6, "concurrency": 3}, signal.SIGSTOP, 1),
    "pod-startup with volumes, API stopped": ("pod-startup", {"count": 4, "concurrency": 2, "with_volume": True},
                                              signal.SIGKILL, 4),
}


@pytest.mark.parametrize("case", CASES)
def test_a_cleanup_that_fails_after_the_work_keeps_the_run(case: str, kubesim_process: Any, run_cp: Any,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    test, params, sig, stays = CASES[case]
    monkeypatch.setattr(kubeapi, "TIMEOUT", (READ_S, READ_S))
    monkeypatch.setattr(common, "GIVE_UP_FLOOR_S", 1.0)
    monkeypatch.setattr(cleanup, "CLEANUP_WAIT_S", 1.0)
    # volume-churn cleans up only after a failed object: one claim's DELETE hangs (given up, the run goes on)
    faults = {"hangDeletes": ["persistentvolumeclaims/-0002"]} if test == "volume-churn" else {}
    sim = kubesim_process({**cluster(provision=0.01, delete=0.01), "faults": faults}, kubelet="simulated")
    # paused: every thread stopped before the cleanup starts (kill() only queues the signal)
    _after_measured(monkeypatch, lambda: pause(sim.proc.pid) if sig == signal.SIGSTOP else sim.proc.send_signal(sig))
    try:
        tl = run_cp(spec(test, timeout=30, **params), kube=sim)  # before: Aborted (no-answer, unreachable)
    finally:
        sim.proc.send_signal(signal.SIGCONT)  # a paused one must run to handle the fixture's SIGTERM
    # paused: each list got no answer in time, said with what it left unchecked; stopped: unreachable, it failed
    said = "its cleanup did not clean everything: pods of" if sig == signal.SIGSTOP else "its cleanup failed"
    assert said in caplog.text, caplog.text
    assert tl.left_behind == stays, tl.left_behind
    done = [r for r in tl.objects.values() if "gone" in r.t]
    assert len(done) == params["count"] - (test == "volume-churn"), {n: r.t for n, r in tl.objects.items()}


@pytest.mark.parametrize("test", ["volume-churn", "pod-startup"])
def test_both_kubernetes_runs_wait_cleanups_constant(test: str, kubesim_factory: Any, run_cp: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """One constant bounds a Kubernetes run's end-of-run cleanup (pod-startup waited a literal 30 s)."""
    monkeypatch.setattr(kubeapi, "TIMEOUT", (READ_S, READ_S))
    monkeypatch.setattr(common, "GIVE_UP_FLOOR_S", 1.0)
    monkeypatch.setattr(cleanup, "CLEANUP_WAIT_S", 1.5)
    waits: list[float] = []
    real = cleanup.kubernetes

    def kubernetes(*args: Any, wait_s: float = 30, **kwargs: Any) -> Any:
        waits.append(wait_s)
        return real(*args, wait_s=wait_s, **kwargs)

    monkeypatch.setattr(cleanup, "kubernetes", kubernetes)
    params = {"count": 4, "concurrency": 2, **({"with_volume": True} if test == "pod-startup" else {})}
    faults = {"hangDeletes": ["persistentvolumeclaims/-0002"]} if test == "volume-churn" else {}
    sim = kubesim_factory({**cluster(provision=0.01, delete=0.01), "faults": faults}, kubelet="simulated")
    run_cp(spec(test, timeout=30, **params), kube=sim)
    assert waits == [1.5], waits


def test_the_cleanups_deletes_are_bounded_by_its_wait(kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """cleanup.kubernetes sends its DELETEs side by side, none past its wait: one after another, 10 hung claim
    DELETEs held it 10 read timeouts (60 s each in use), whatever its wait (reviewer of this stop)."""
    from podtax import config
    from podtax_runner.controlplane.common import LABEL_RUN

    monkeypatch.setattr(kubeapi, "TIMEOUT", (2.0, 2.0))
    names = [f"podtax-vc-0123abcd-0123456789-{i:04d}" for i in range(1, 11)]
    sim = kubesim_factory({**cluster(provision=0.01, delete=0.01),
                           "faults": {"hangDeletes": [f"persistentvolumeclaims/{n[-5:]}" for n in names]}})
    api = execute.kube_client(config.load(config.RunnerSettings, runner_kubeconfig=sim.kubeconfig))
    kube = kubeapi.Kube(api)
    kube.ensure_namespace("podtax-runs")
    for name in names:
        kube.call("create", kube.core.create_namespaced_persistent_volume_claim, "podtax-runs", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "labels": {LABEL_RUN: "0123456789"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    out = cleanup.kubernetes(kube, "podtax-runs", f"{LABEL_RUN}=0123456789", wait_s=1.0)
    sent = caplog.text.count("got no answer in time")
    assert 1 <= sent <= 8, caplog.text  # before: all 10, one after another (20 s)
    assert out.left >= 10, out  # the 10 claims, and their PVs


def test_hung_deletes_do_not_keep_the_others_from_being_sent(kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
                                                             capfd: pytest.CaptureFixture[str]) -> None:
    """8 hung claim DELETEs (as many as the cleanup's workers) held every worker until its wait ran out: the other
    claims' deletes were never sent, at each new cleanup again (the listing comes in the same order), and `podtax
    volumes cleanup` said '10 still present', naming none of the claims. Each delete now gets its share of the wait,
    then its worker takes the next; each claim that stays is named with why."""
    from podtax_runner.volumes_cli import main as volumes

    monkeypatch.setattr(kubeapi, "TIMEOUT", (20.0, 20.0))  # more than the wait: the share is what ends a hung one
    names = [common.object_name("vc", "hung", "hung/r1", i) for i in range(1, 11)]
    sim = kubesim_factory({**cluster(provision=0.01, delete=0.01),
                           "faults": {"hangDeletes": [f"persistentvolumeclaims/{n[-5:]}" for n in names[:8]]}})
    labels = {common.LABEL_KIND: common.KIND, common.LABEL_CAMPAIGN: "hung"}
    for name in names:
        sim.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "labels": labels},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    monkeypatch.setattr(cleanup, "kubernetes", lambda *a, wait_s=60, real=cleanup.kubernetes, **k: real(
        *a, wait_s=4.0, **k))  # the command waits 60 s; the same rule, shorter
    code = volumes(["cleanup", "--backend", "kubernetes", "--campaign", "hung", "--kubeconfig", str(sim.kubeconfig)])
    out, err = capfd.readouterr()
    assert sorted(c["metadata"]["name"] for c in sim.objects("persistentvolumeclaims")) == names[:8], (out, err)
    for name in names[8:]:  # before: not sent
        assert f"removed persistentvolumeclaim default/{name}" in out, out
    for name in names[:8]:
        assert f"still present: persistentvolumeclaim default/{name}: its delete got no answer in time" in err, err
    assert code == 1
