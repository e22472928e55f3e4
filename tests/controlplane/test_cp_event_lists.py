"""Claims stuck with no event yet (a provisioner behind, as in a scale test) cost one events list per give-up and per
abort, not one per claim. Before, a claim given up listed its own events, and the abort at the run's timeout listed
each stuck claim's in turn until one had an event: 20 claims stuck with none sent 20 lists after the deadline (2,000
claims: 2,000 lists, up to kevents.LIST_S each, to an API server already behind). The real runner and kubernetes
client against kubesim, whose provisioner writes no event on the stuck claims."""

from __future__ import annotations

import types
from typing import Any

import pytest
from kubernetes import client
from podtax_runner.controlplane import common, kevents, kubeapi
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import cluster, leftovers, spec
from tests.controlplane.test_cp_stragglers import NEVER_BOUND, stick


def silence(sim: Any, monkeypatch: pytest.MonkeyPatch, numbers: set[int]) -> None:
    """FAULT INJECTION: no event is recorded on the claims whose names end in one of `numbers`."""
    api = sim.emulator.api
    real = api.record_event

    def record_event(obj: Any, *args: Any, **kwargs: Any) -> None:
        name = obj["metadata"]["name"]
        if not (obj.get("kind") == "PersistentVolumeClaim" and name[-4:].isdigit() and int(name[-4:]) in numbers):
            real(obj, *args, **kwargs)

    monkeypatch.setattr(api, "record_event", record_event)


def count_event_lists(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The runner's events lists, as sent (kubeapi.Kube.call), one entry each."""
    sent: list[str] = []
    real = kubeapi.Kube.call

    def call(self: Any, verb: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(fn, "__name__", "") == "list_namespaced_event":
            sent.append(kwargs.get("field_selector", ""))
        return real(self, verb, fn, *args, **kwargs)

    monkeypatch.setattr(kubeapi.Kube, "call", call)
    return sent


def test_an_abort_with_many_claims_stuck_lists_events_once(kubesim_factory: Any, run_cp: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    stuck = set(range(1, 21))
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="none")
    stick(sim, monkeypatch, *NEVER_BOUND, numbers=stuck)
    silence(sim, monkeypatch, stuck)
    sent = count_event_lists(monkeypatch)
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", count=30, concurrency=10, timeout=4), kube=sim)
    assert info.value.reason == "timeout", info.value.detail
    assert "20 of 30 objects stuck in the bind wait (20 not Bound)" in info.value.detail, info.value.detail
    assert sent == ["involvedObject.kind=PersistentVolumeClaim"], (len(sent), sent)  # before: 20, one per stuck claim
    assert leftovers(sim.kubeconfig) == []


def test_claims_given_up_at_once_list_events_once(kubesim_factory: Any, run_cp: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "GIVE_UP_FLOOR_S", 1.0)
    stuck = set(range(1, 11))  # within the allowance of 120: max(10, 12)
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="none")
    stick(sim, monkeypatch, *NEVER_BOUND, numbers=stuck)
    silence(sim, monkeypatch, stuck - {4})  # claim 4 has its Provisioning event, the others none yet
    sent = count_event_lists(monkeypatch)
    tl = run_cp(spec("volume-churn", count=120, concurrency=20, timeout=30), kube=sim)
    failed = {int(n[-4:]): r.error or "" for n, r in tl.objects.items() if r.error}
    assert set(failed) == stuck, failed
    assert all("given up, the run went on" in e for e in failed.values()), failed
    assert "; its newest event: Provisioning: External provisioner is provisioning volume" in failed[4], failed[4]
    assert not [e for n, e in failed.items() if n != 4 and "its newest event" in e], failed
    assert sent == ["involvedObject.kind=PersistentVolumeClaim"], (len(sent), sent)  # before: 10, one per claim
    assert leftovers(sim.kubeconfig) == []


def test_one_reading_follows_the_pages_and_stops_at_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """The events are listed in pages of kevents.PAGE, their continue tokens followed, at most kevents.PAGES of them:
    a claim whose events come after those is not quoted (a fake API answering fixed pages; kubesim's paging: the
    test below)."""
    monkeypatch.setattr(kevents, "PAGES", 3)

    def event(claim: str, reason: str) -> dict[str, Any]:
        return {"involvedObject": {"name": claim, "uid": f"u-{claim}"}, "reason": reason, "message": "m",
                "lastTimestamp": "2026-01-01T00:00:00Z"}

    pages = [[event("a", "Provisioning")], [event("b", "ProvisioningFailed")], [event("c", "Provisioning")],
             [event("d", "Provisioning")]]
    asked: list[dict[str, Any]] = []

    class Kube:
        core = types.SimpleNamespace(list_namespaced_event=None)

        def call(self, verb: str, fn: Any, ns: str, **kwargs: Any) -> dict[str, Any]:
            asked.append(kwargs)
            i = int(kwargs.get("_continue", "0"))
            return {"metadata": {"continue": str(i + 1) if i + 1 < len(pages) else ""}, "items": pages[i]}

    said = kevents.Events(Kube(), "ns").said(["a", "b", "d", "c"], "PersistentVolumeClaim",
                                            {"a": "u-a", "b": "u-other"})
    assert said == {"a": "its newest event: Provisioning: m", "c": "its newest event: Provisioning: m"}
    assert [k.get("_continue") for k in asked] == [None, "1", "2"] and {k["limit"] for k in asked} == {kevents.PAGE}


def test_one_reading_pages_through_kubesim(kubesim: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's events list against kubesim's paging (the API server's: `limit` matches of the field selector a
    page, continue tokens over one snapshot): more claims' events than one page, among the pods' events the selector
    leaves out, are all read, a page at a time; at most PAGES pages. Before, kubesim answered in one page."""
    core, ns = kubesim.api_client(), "run-events"
    client.CoreV1Api(core).create_namespace({"metadata": {"name": ns}})
    for i in range(60):  # claims' events at even numbers, pods' at odd: keys interleave
        kind, obj = ("PersistentVolumeClaim", f"claim-{i // 2:02d}") if i % 2 == 0 else ("Pod", f"pod-{i:02d}")
        client.CoreV1Api(core).create_namespaced_event(ns, {
            "metadata": {"name": f"e-{i:03d}"}, "reason": "Provisioning", "message": f"m{i}", "type": "Normal",
            "involvedObject": {"kind": kind, "name": obj, "namespace": ns}, "lastTimestamp": "2026-01-01T00:00:00Z"})
    monkeypatch.setattr(kevents, "PAGE", 4)
    claims = [f"claim-{i:02d}" for i in range(30)]
    asked: list[Any] = []
    real = kubeapi.Kube.call

    def call(self: Any, verb: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        page = real(self, verb, fn, *args, **kwargs)
        asked.append((kwargs.get("_continue"), len(page.get("items") or [])))
        return page

    monkeypatch.setattr(kubeapi.Kube, "call", call)
    said = kevents.Events(kubeapi.Kube(core), ns).said(claims, "PersistentVolumeClaim", {})
    assert said == {c: f"its newest event: Provisioning: m{2 * int(c[-2:])}" for c in claims}, said
    assert [n for _, n in asked] == [4, 4, 4, 4, 4, 4, 4, 2], asked  # before: one list of all 30
    assert asked[0][0] is None and len({t for t, _ in asked}) == 8, asked  # each page after its own token
    asked.clear()
    monkeypatch.setattr(kevents, "PAGES", 3)
    said = kevents.Events(kubeapi.Kube(core), ns).said(claims, "PersistentVolumeClaim", {})
    assert sorted(said) == claims[:12] and len(asked) == 3, (sorted(said), asked)
