"""One stuck object costs the run that object, not the run: a claim never Bound, a consumer pod or a pod
that never starts, a PV whose deletion takes long are failed on the timeline with what they lacked and
in which wait, the other objects keep their timings, and nothing is left behind. Too many stuck: the
run still aborts at its timeout, saying how many were stuck in which wait."""

from __future__ import annotations

import time
from typing import Any

import pytest
from podtax.parsers import timeline as parser
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import cluster, leftovers, spec

NEVER_BOUND = ("PersistentVolumeClaim", {"podtax.io/sim-provision-seconds": "inf"})
NEVER_STARTS = ("Pod", {"podtax.io/sim-start-seconds": "inf"})
PV_DELETED_LATE = ("PersistentVolumeClaim", {"podtax.io/sim-delete-seconds": "14"})  # > the 10 s give-up floor


def stick(sim: Any, monkeypatch: pytest.MonkeyPatch, kind: str, annotations: dict[str, str],
          numbers: set[int]) -> None:
    """FAULT INJECTION: the emulator's create adds kubesim's straggler `annotations` (tools/kubesim/README.md)
    to the objects of `kind` whose names end in one of `numbers` (podtax-<kind>-<run>-<nnnn>)."""
    api = sim.emulator.api
    real = api.create

    def create(res: Any, ns: str, body: Any) -> Any:
        name = body["metadata"]["name"]
        if res.kind == kind and name[-4:].isdigit() and int(name[-4:]) in numbers:
            body["metadata"].setdefault("annotations", {}).update(annotations)
        return real(res, ns, body)

    monkeypatch.setattr(api, "create", create)


@pytest.mark.parametrize("test,params,stuck,says", [
    ("volume-churn", {}, NEVER_BOUND, "not Bound after"),
    ("volume-churn", {"consumer": True}, NEVER_STARTS, "consumer pod not Running after"),
    ("volume-churn", {}, PV_DELETED_LATE, "PV not deleted after"),
    ("pod-startup", {}, NEVER_STARTS, "not started after"),
    ("pod-startup", {"with_volume": True}, NEVER_BOUND, "not scheduled after"),  # its claim is never Bound
])
def test_one_stuck_object_is_failed_and_the_run_goes_on(kubesim_factory: Any, run_cp: Any,
                                                         monkeypatch: pytest.MonkeyPatch, test: str,
                                                         params: dict[str, Any], stuck: Any, says: str) -> None:
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="simulated")
    stick(sim, monkeypatch, *stuck, numbers={3})
    timeout = 20.0  # stall window 2 s; stragglers given up after 10 s without progress
    started = time.monotonic()
    tl = run_cp(spec(test, count=12, concurrency=4, timeout=timeout, **params), kube=sim)
    assert time.monotonic() - started < timeout
    failed = {n: r.error for n, r in tl.objects.items() if r.error}
    assert list(failed) == [n for n in tl.objects if n.endswith("-0003")], failed
    wait = "delete" if stuck is PV_DELETED_LATE else "start" if test == "pod-startup" else "bind"
    reason = failed.popitem()[1]
    assert says in reason and f"of the {wait} wait" in reason, reason
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []
    parsed = parser.parse(tl.jsonl(), test, {"count": 12})
    values = parsed.values()
    assert values["objects_ok"] == 11 and values["errors"] == 1  # the other 11 timed
    assert "wall_s" not in values and not [m for m in values if m.endswith("_makespan_s")]
    assert any(f.startswith("ERRORS: 1 of 12 objects failed") for f in parsed.flags)


@pytest.mark.parametrize("count,stuck,says", [
    (20, set(range(1, 13)), "12 of 20 objects stuck in the bind wait (12 not Bound; "),  # more than 10
    (3, {1, 2, 3}, "3 of 3 objects stuck in the bind wait (3 not Bound; "),  # none got through
])
def test_too_many_stuck_still_aborts_and_says_how_many(kubesim_factory: Any, run_cp: Any,
                                                       monkeypatch: pytest.MonkeyPatch, count: int,
                                                       stuck: set[int], says: str) -> None:
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="none")
    stick(sim, monkeypatch, *NEVER_BOUND, numbers=stuck)
    with pytest.raises(Aborted) as info:
        # 8 s: at 4 s, under load (1 in 15 at load 6) the deadline came before the bind wait began (the claims'
        # creates still in flight), so the reason said nothing of the stuck claims
        run_cp(spec("volume-churn", count=count, concurrency=5, timeout=8), kube=sim)
    assert info.value.reason == "timeout" and says in info.value.detail, info.value.detail
    assert "the run did not finish within 8 s" in info.value.detail
    # the first stuck claim's newest event (kevents): its provisioning begun, not failed
    assert "; first: its newest event: Provisioning: External provisioner is provisioning volume for claim " \
        in info.value.detail, info.value.detail
    assert leftovers(sim.kubeconfig) == []
