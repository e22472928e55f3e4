"""A pod deleted by another client (or with its namespace) before the run deletes it fails at once, named so, in
no phase: the real runner and kubernetes client against kubesim. Before, a pod gone before Ready was waited for and
given up 10 s later as a lower bound of phases it never finished, and the run's delete, answered 404, gave it a
`gone` before its `delete_requested`: the parser refused the whole run (`deleted is negative`)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from podtax.parsers import timeline as parser
from podtax_kubesim import resources as R
from podtax_runner.controlplane.timeline import Timeline

from tests.controlplane.conftest import cluster, leftovers, spec


def delete_once_seen_initialized(sim: Any, monkeypatch: pytest.MonkeyPatch, number: int,
                                 namespace: bool = False) -> None:
    """FAULT INJECTION: another client deletes pod <number> (or its namespace) once the run has recorded that pod
    Initialized (so its first missing end point is `started`) and every create answered (none refused for a
    namespace Terminating); that pod never starts (kubesim's podtax.io/sim-start-seconds inf). Synchronised on the
    run's own record (Timeline.mark, the real one, called through), not on a timer: a delete 0.2 s after the create,
    on a machine at load average 8-9, came before any poll (every 0.1 s) had read the pod, which the run then called
    `not scheduled` (it never saw it scheduled: what it recorded, not a mislabel); a watch could lose the same race
    were the emulator's loop held 0.2 s between the create and the scheduling."""
    api = sim.emulator.api
    real, mark = api.create, Timeline.mark
    fired: list[str] = []
    where: dict[str, str] = {}  # pod <number> -> its namespace

    def create(res: Any, ns: str, body: Any) -> Any:
        if res.kind == "Pod" and body["metadata"]["name"].endswith(f"-{number:04d}"):
            body["metadata"].setdefault("annotations", {})["podtax.io/sim-start-seconds"] = "inf"
            where[body["metadata"]["name"]] = ns
        return real(res, ns, body)

    def recorded(tl: Timeline, name: str, phase: str, *args: Any, **kwargs: Any) -> bool:
        done = mark(tl, name, phase, *args, **kwargs)
        pod = next((n for n in tl.objects if n.endswith(f"-{number:04d}")), "")
        if done and not fired and tl.has(pod, "initialized") and all("api_accepted" in r.t
                                                                     for r in tl.objects.values()):
            fired.append(pod)
            if namespace:
                sim.call(api.delete, R.BY_KEY[R.NAMESPACES], "", where[pod], {})
            else:
                sim.call(api.force_delete, R.PODS, where[pod], pod)
        return done

    monkeypatch.setattr(api, "create", create)
    monkeypatch.setattr(Timeline, "mark", recorded)


@pytest.mark.parametrize("observe", ["watch", "poll"])
def test_a_pod_deleted_by_another_before_ready_fails_at_once(kubesim_factory: Any, run_cp: Any,
                                                             monkeypatch: pytest.MonkeyPatch, observe: str) -> None:
    sim = kubesim_factory(cluster(), kubelet="simulated")
    delete_once_seen_initialized(sim, monkeypatch, 3)
    tl = run_cp(spec("pod-startup", count=12, concurrency=4, timeout=30, observe=observe, poll_interval_s=0.1),
                kube=sim)
    failed = {n: r for n, r in tl.objects.items() if r.error}
    assert [n[-4:] for n in failed] == ["0003"], {n: r.error for n, r in failed.items()}
    rec = next(iter(failed.values()))
    assert rec.error is not None and rec.error.startswith("deleted before Ready (not started), ") \
        and "not by this run: by another client, or with namespace " in rec.error, rec.error
    assert "given_up" not in rec.t and "delete_requested" not in rec.t, rec.t  # no lower bound: it did not take longer
    values = parser.parse(tl.jsonl(), "pod-startup", {"count": 12}).values()  # refused before: deleted is negative
    assert values["objects_ok"] == 11 and values["errors"] == 1
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []


def test_a_pod_deleted_by_another_after_ready_fails_and_the_run_parses(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory(cluster(), kubelet="simulated")

    def ready(ev: Any) -> None:  # FAULT INJECTION: another client deletes pod 3 once it is Ready
        pod = ev.obj
        if ev.type != "DELETED" and pod["metadata"]["name"].endswith("-0003") and any(
                c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or []):
            asyncio.get_running_loop().call_soon(sim.emulator.api.force_delete, R.PODS,
                                                 pod["metadata"]["namespace"], pod["metadata"]["name"])

    sim.emulator.store.listen(R.PODS, ready)
    # concurrency 1: the run deletes its pods once the 12th is Ready, well after the 3rd was deleted
    tl = run_cp(spec("pod-startup", count=12, concurrency=1, timeout=30), kube=sim)
    failed = {n[-4:]: r.error for n, r in tl.objects.items() if r.error}
    assert list(failed) == ["0003"] and (failed["0003"] or "").startswith("deleted after Ready, "), failed
    values = parser.parse(tl.jsonl(), "pod-startup", {"count": 12}).values()  # refused before: deleted is negative
    assert values["objects_ok"] == 11 and values["errors"] == 1
    assert leftovers(sim.kubeconfig) == []


def test_a_run_whose_namespace_is_deleted_says_so_for_each_pod(kubesim_factory: Any, run_cp: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    sim = kubesim_factory(cluster(), kubelet="simulated")
    delete_once_seen_initialized(sim, monkeypatch, 6, namespace=True)  # and every pod with it
    tl = run_cp(spec("pod-startup", count=12, concurrency=2, timeout=30), kube=sim)
    errors = {r.error for r in tl.objects.values()}
    assert all(e and e.startswith("deleted ") and "not by this run: by another client, or with namespace " in e
               for e in errors), errors
    assert any(e and e.startswith("deleted before Ready (not started), ") for e in errors), errors  # the 6th
    with pytest.raises(parser.ParseFailure) as info:  # refused before as 'deleted is negative', naming no cause
        parser.parse(tl.jsonl(), "pod-startup", {"count": 12})
    assert "none of the 12 objects completed" in str(info.value) and "not by this run" in str(info.value)
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []
