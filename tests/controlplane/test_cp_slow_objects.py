"""A slow object is timed, a stuck one given up: a wait gives up on its stragglers only after no progress
for the longest of the stall window (a tenth of the timeout), 10 s and 3x the slowest object it saw get
through, or when only the stall window is left of the run. An audit planted two claims binding after 5 s:
at timeout 20 they were "given up" at 2.5 s (p99 550 ms, 2 errors), at timeout 60 timed (p99 5,036 ms);
the tail must not depend on the timeout. A given-up object's record says when it was given up
(t.given_up) and that it took longer than that."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.parsers import timeline as parser

from tests.controlplane.conftest import cluster, leftovers, spec
from tests.controlplane.test_cp_stragglers import stick


def provision_after(seconds: str) -> tuple[str, dict[str, str]]:
    return "PersistentVolumeClaim", {"podtax.io/sim-provision-seconds": seconds}


@pytest.mark.parametrize("timeout,provision,plants,given_up,says", [
    # the audit's case: 5 s stragglers among 10 ms claims, timeout 20 (stall window 2 s): timed
    (20, 0.01, {3: "5", 9: "5"}, set(), ""),
    # patience scales with the slowest: claims of 5 s, one of 17 s (a 10 s floor alone gives up at 15 s)
    (40, 5.0, {3: "17"}, set(), ""),
    # a claim that never binds beside a slow one: the slow one timed, the stuck one given up after 10 s
    (20, 0.01, {3: "inf", 9: "3"}, {3}, "no object progressed for 10 s"),
    # a short run gives up before its end instead of aborting (stall window 1 s, 10 s of patience not left)
    (8, 0.01, {3: "inf"}, {3}, "the run's end near"),
])
def test_slow_objects_are_timed_and_stuck_ones_given_up(kubesim_factory: Any, run_cp: Any,
                                                        monkeypatch: pytest.MonkeyPatch, timeout: float,
                                                        provision: float, plants: dict[int, str],
                                                        given_up: set[int], says: str) -> None:
    sim = kubesim_factory(cluster(provision=provision, delete=0.01), kubelet="none")
    for number, seconds in plants.items():
        stick(sim, monkeypatch, *provision_after(seconds), numbers={number})
    tl = run_cp(spec("volume-churn", count=12, concurrency=4, timeout=timeout), kube=sim)  # not Aborted: in time
    failed = {int(n[-4:]): r for n, r in tl.objects.items() if r.error}
    assert set(failed) == given_up, {n: r.error for n, r in failed.items()}
    for r in failed.values():  # the record: when it was given up, and that it took longer than that
        took = r.t["given_up"] - r.t["request_sent"]
        assert r.error.startswith(f"not Bound after {took:.1f} s since request_sent"), r.error
        assert f"took longer than {took:.1f} s" in r.error and says in r.error, r.error
        assert took >= min(10, timeout / 2), r.error  # 10 s of patience, or (later than before) the run's end near
        assert r.t["given_up"] < timeout, r.t  # before the run's end (the timeline's clock starts with the run)
    parsed = parser.parse(tl.jsonl(), "volume-churn", {"count": 12}).values()
    assert parsed["objects_ok"] == 12 - len(given_up) and parsed["errors"] == len(given_up)
    slowest = max((float(s) for n, s in plants.items() if n not in given_up), default=provision)
    assert parsed["provisioned_max_ms"] >= slowest * 1000  # the slow claims are in the tail, not dropped
    for n, r in tl.objects.items():
        if int(n[-4:]) not in given_up:
            assert "given_up" not in r.t and r.t["bound"] - r.t["request_sent"] >= float(plants.get(int(n[-4:]),
                                                                                                   provision))
    assert tl.left_behind == 0 and leftovers(sim.kubeconfig) == []
