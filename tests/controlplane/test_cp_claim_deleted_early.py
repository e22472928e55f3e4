"""A claim deleted by another client (or with its namespace) before the run deletes it fails at once, named so, in
no phase, as a pod deleted early does (test_cp_pod_deleted_early): the real runner and kubernetes client against
kubesim. Before, a claim deleted after Bound was counted with its bind phases and no `deleted` (not in objects_ok,
not an error, yet in the makespans), and one deleted before Bound was waited for and given up as a lower bound."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from podtax.parsers import timeline as parser
from podtax_kubesim import resources as R

from tests.controlplane.conftest import cluster, leftovers, spec

GONE = "not by this run: by another client, or with namespace "


def delete_claim(sim: Any, number: int, when: str, namespace: bool = False) -> None:
    """FAULT INJECTION: another client deletes claim <number> (or its namespace) as soon as the emulator made it
    (`when` "created"; that claim is never provisioned: podtax.io/sim-provision-seconds inf) or Bound it ("bound").
    The delete is queued on the emulator's loop before the event that shows the claim goes out, so it is done before
    any request the run sends on seeing that event (its own delete, once the last claim is Bound)."""
    api = sim.emulator.api
    fired: list[str] = []

    def seen(ev: Any) -> None:
        claim = ev.obj
        meta = claim["metadata"]
        if fired or ev.type == "DELETED" or not meta["name"].endswith(f"-{number:04d}"):
            return
        if ev.type == "ADDED" if when == "created" else claim["status"].get("phase") == "Bound":
            fired.append(meta["name"])
            gone = (lambda: api.delete(R.NAMESPACE, "", meta["namespace"], {})) if namespace else \
                (lambda: api.delete(R.PVC, meta["namespace"], meta["name"], {}))
            asyncio.get_running_loop().call_soon(gone)

    if when == "created":
        real = api.create

        def create(res: Any, ns: str, body: Any) -> Any:
            if res.kind == "PersistentVolumeClaim" and body["metadata"]["name"].endswith(f"-{number:04d}"):
                body["metadata"].setdefault("annotations", {})["podtax.io/sim-provision-seconds"] = "inf"
            return real(res, ns, body)

        api.create = create
    sim.emulator.store.listen(R.PVCS, seen)


# concurrency 1: the claims are made and Bound in turn, the 12th last; the run deletes its claims once it is Bound
@pytest.mark.parametrize(("when", "number", "observe"), [("bound", 12, "watch"), ("bound", 12, "poll"),
                                                         ("created", 3, "watch"), ("created", 3, "poll")])
def test_a_claim_deleted_by_another_fails_at_once(kubesim_factory: Any, run_cp: Any, when: str, number: int,
                                                  observe: str) -> None:
    sim = kubesim_factory(cluster())
    delete_claim(sim, number, when)
    tl = run_cp(spec("volume-churn", count=12, concurrency=1, timeout=30, observe=observe, poll_interval_s=0.05),
                kube=sim)
    failed = {n[-4:]: r for n, r in tl.objects.items() if r.error}
    assert list(failed) == [f"{number:04d}"], {n: r.error for n, r in failed.items()}
    rec = failed[f"{number:04d}"]
    # a poll may not see a claim Bound before it is gone (and then says so); a watch sees every state in turn
    lacked = "" if observe == "poll" else "after Bound, " if when == "bound" else "before Bound (not Bound), "
    assert (rec.error or "").startswith(f"deleted {lacked}") and GONE in (rec.error or ""), rec.error
    assert "given_up" not in rec.t, rec.t  # no lower bound: it did not take longer, it went
    values = parser.parse(tl.jsonl(), "volume-churn", {"count": 12}).values()
    assert values["objects_ok"] == 11 and values["errors"] == 1
    assert "bound_makespan_s" not in values  # the makespans of 11 claims would pass for those of 12
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []


def test_a_run_whose_namespace_is_deleted_says_so_for_each_claim(kubesim_factory: Any, run_cp: Any) -> None:
    sim = kubesim_factory(cluster())
    delete_claim(sim, 12, "bound", namespace=True)  # and every claim with it
    tl = run_cp(spec("volume-churn", count=12, concurrency=1, timeout=30), kube=sim)
    errors = [r.error for r in tl.objects.values()]
    assert all(e and e.startswith("deleted after Bound, ") and GONE in e for e in errors), errors
    with pytest.raises(parser.ParseFailure) as info:
        parser.parse(tl.jsonl(), "volume-churn", {"count": 12})
    assert "none of the 12 objects completed" in str(info.value) and "not by this run" in str(info.value)
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []
