"""A run whose namespace is being deleted, or was deleted mid-run, ends at once in one line naming the fix: every
object's create is refused alike (NamespaceLifecycle: 403 `unable to create new content in namespace <ns> because it
is being terminated` while it is Terminating, 404 `namespaces "<ns>" not found` once gone). Before, each create failed
its own object until 11 had: `api-errors: the API refused 11 of 30 requests (last: create: 403 Forbidden: ...)`, no
fix named and a create sent for each. Against kubesim (a namespace held Terminating by a finalizer, as one stuck
behind an unavailable APIService or a controller gone), the real kubernetes client and the real executors."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import kubernetes
import pytest
from podtax_kubesim import resources as R
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.kubeapi import Kube

from tests.controlplane.conftest import cluster, ours, spec

NS = "podtax-runs"


def creates(sim: Any, plural: str, code: str = "") -> int:
    """The POSTs of `plural` the API server counted (its apiserver_request_total), answered `code` (any: "")."""
    totals = Kube(sim.api_client()).scrape() or {}
    return int(sum(n for key, n in totals.items() if key.startswith(f"POST {plural} {code}")))


def aborted_by_a_delete_mid_run(sim: Any, run_cp: Any, delete: Callable[[], object]) -> str:
    """The detail of the Aborted that ends a volume-churn run of 60 claims in which `delete` was called once 4 of its
    claims existed (not at all if the run ended first); the run must end kubernetes-error, in one line."""
    done = threading.Event()

    def delete_when_some_exist() -> None:
        sim.wait_for(lambda: done.is_set() or len(ours(sim, "persistentvolumeclaims", NS)) >= 4, timeout=30)
        if not done.is_set():
            delete()

    deleter = threading.Thread(target=delete_when_some_exist)
    deleter.start()
    try:
        with pytest.raises(Aborted) as err:
            run_cp(spec("volume-churn", count=60, concurrency=2, timeout=30), kube=sim)
    finally:
        done.set()
        deleter.join()
    detail = err.value.detail
    assert err.value.reason == "kubernetes-error" and "\n" not in detail, (err.value.reason, detail)
    return detail


@pytest.mark.parametrize(("test", "plural"), [("volume-churn", "persistentvolumeclaims"), ("pod-startup", "pods")])
def test_a_namespace_stuck_terminating_ends_the_run_at_its_first_create(test: str, plural: str, kubesim_factory: Any,
                                                                        run_cp: Any) -> None:
    sim = kubesim_factory(cluster(), kubelet="none")
    core = kubernetes.client.CoreV1Api(sim.api_client())
    core.create_namespace({"metadata": {"name": NS, "finalizers": ["example.com/hold"]}})
    core.delete_namespace(NS)
    assert core.read_namespace(NS).status.phase == "Terminating"
    with pytest.raises(Aborted) as err:
        run_cp(spec(test, count=30, concurrency=2, timeout=30), kube=sim)
    detail = err.value.detail
    assert err.value.reason == "kubernetes-error" and "\n" not in detail, (err.value.reason, detail)
    assert f"refuses new objects in namespace {NS}: it is being deleted" in detail, detail
    assert "because it is being terminated" in detail and f"kubectl get namespace {NS}" in detail, detail
    assert creates(sim, plural) <= 2  # those in flight at the first refusal, not one for each object


def test_a_namespace_deleted_mid_run_ends_the_run_naming_it(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory(cluster(provision=0.05), kubelet="none")
    core = kubernetes.client.CoreV1Api(sim.api_client())
    detail = aborted_by_a_delete_mid_run(sim, run_cp, lambda: core.delete_namespace(NS))
    # a namespace deleted is Terminating while the namespace controller empties it (403), then gone (404): the run
    # ends at whichever its next create meets (kubesim deleted it at once before: always the 404)
    gone = (f"namespace {NS} was deleted while the run was in flight" in detail
            and (f'namespaces \\"{NS}\\" not found' in detail or f'namespaces "{NS}" not found' in detail))
    going = (f"refuses new objects in namespace {NS}: it is being deleted" in detail
             and "because it is being terminated" in detail)
    assert gone or going, detail
    assert creates(sim, "persistentvolumeclaims", "404") + creates(sim, "persistentvolumeclaims", "403") <= 2


def test_a_namespace_gone_mid_run_ends_the_run_naming_it(kubesim_factory: Any, run_cp: Any) -> None:
    """The 404 branch, every time (the test above meets the 403 most runs, as a cluster would): the namespace's
    spec.finalizers emptied beforehand (`finalize`, an admin's way out of a stuck namespace), then deleted twice in one
    turn of kubesim's loop (its Api.delete: two DELETEs with no request between them; the first makes it Terminating,
    the second removes it, no finalizer left), so no create meets it Terminating: the next one gets the 404."""
    sim = kubesim_factory(cluster(provision=0.05), kubelet="none")
    core = kubernetes.client.CoreV1Api(sim.api_client())
    core.create_namespace({"metadata": {"name": NS}})
    core.replace_namespace_finalize(NS, {"metadata": {"name": NS}, "spec": {"finalizers": []}})

    def gone_at_once() -> None:
        for _ in range(2):
            sim.emulator.api.delete(R.NAMESPACE, "", NS, {})

    detail = aborted_by_a_delete_mid_run(sim, run_cp, lambda: sim.call(gone_at_once))
    assert f"namespace {NS} was deleted while the run was in flight" in detail, detail
    assert f'namespaces \\"{NS}\\" not found' in detail or f'namespaces "{NS}" not found' in detail, detail
    assert creates(sim, "persistentvolumeclaims", "404") <= 2 and not creates(sim, "persistentvolumeclaims", "403")


def test_a_namespace_the_account_may_not_create_is_named_so(kubesim_factory: Any, run_cp: Any) -> None:
    """Not 'deleted while the run was in flight' (ced93dc8 said so): it was never there, and creating it is refused."""
    sim = kubesim_factory({**cluster(), "faults": {"forbid": ["create namespaces"]}}, kubelet="none")
    with pytest.raises(Aborted) as err:
        run_cp(spec("volume-churn", count=30, concurrency=2, timeout=30), kube=sim)
    detail = err.value.detail
    assert err.value.reason == "kubernetes-error" and "\n" not in detail, (err.value.reason, detail)
    assert f"namespace {NS} does not exist" in detail and "may not create it (403 Forbidden: " in detail, detail
    assert f"`kubectl create namespace {NS}`" in detail and "deleted" not in detail, detail
    assert creates(sim, "persistentvolumeclaims", "404") <= 2
