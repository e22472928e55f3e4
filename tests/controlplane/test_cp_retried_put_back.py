"""A call answered 429 and then a 5xx, through kubesim: the runner puts it back to its first attempt (HELD: an upper
bound holding the wait), and the RETRIED flag names its figures before the `;` and shows no wait.

Before (stop 53's note), kubesim could not plant 429-then-500 on one object: its first matching failCreates /
failDeletes entry decided alone, so a second entry of the same object was never answered and the call went through at
its second attempt (re-timed from it, `create: 429 Too Many Requests`); the put-back (review r7) was tested with the
real Timeline only. Now entries are tried in order, an entry that has answered its `times` passing calls to the next
(tools/kubesim faults.py). Through the real kubernetes client against kubesim, the real executor and parser."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.parsers import parse_run
from podtax_runner.controlplane.timeline import HELD

from tests.controlplane.conftest import cluster, spec

TARGET = "persistentvolumeclaims/-0002"


@pytest.mark.parametrize(("key", "then"), [("failCreates", 500), ("failCreates", 504), ("failDeletes", 500)])
def test_a_call_answered_429_then_5xx_is_an_upper_bound_from_its_first_attempt(
        kubesim_factory: Any, run_cp: Any, key: str, then: int) -> None:
    faults = {key: [{"match": TARGET, "status": 429, "times": 1}, {"match": TARGET, "status": then, "times": 1}]}
    sim = kubesim_factory({**cluster(provision=0.01), "faults": faults}, kubelet="none")
    tl = run_cp(spec("volume-churn", count=3, concurrency=1, timeout=30), kube=sim)
    assert tl.errors() == 0, [o.error for o in tl.objects.values()]
    call, point, end, figure = (("create", "request_sent", "api_accepted", "accepted_max_ms") if key == "failCreates"
                                else ("delete", "delete_requested", "gone", "deleted_max_ms"))
    (name, why), = tl.retried.items()
    assert name.endswith("-0002") and why.startswith(f"{call}: {then} ") and why.endswith(f"({HELD})"), tl.retried
    t = tl.objects[name].t
    # put back to its first attempt: its phase holds the 429's Retry-After (1 s) and the 5xx's attempt
    assert f"first_{point}" not in t and t[end] - t[point] >= 1.0, t
    flag, = [f for f in parse_run("volume-churn", tl.jsonl()).flags if f.startswith("RETRIED: ")]
    assert figure in flag.split(";")[0], flag  # an upper bound
    assert f"(first: {name}: {why})" in flag and "sent again 1." not in flag, flag  # no wait shown
