"""Each call of an object sent again keeps its own reason in the summary's `retried` and in held_points (review r14 on
f82f7ec6): the timeline kept one reason an object for its create or consumer and one for its delete, and wrote one.
(a) a claim whose consumer's create and delete were both held (each consumer create sent again is held) named the
consumer's only: its held delete (53 ms in the probe) was said exact; (b) a consumer's reason replaced its claim's
held create's; (c) RETRIED's `(first: ...)` named an object with a delete sent again before an earlier one with a
create sent again. Now every held call's phases are upper bounds and the first object named is the first in run
order. A timeline of the previous runner (one reason an object, the deletes' objects first) still reads. Through the
real kubernetes client against kubesim and the real Nomad client against nomadsim, the real executor and parser."""

from __future__ import annotations

import json
from typing import Any

from podtax.parsers import parse_run
from podtax.parsers.timeline_flags import held_points
from podtax.parsers.timeline_records import read
from podtax_runner.controlplane.timeline import HELD, HELD_SHORT, Timeline

from tests.controlplane.conftest import cluster, spec

CLAIM, POD = "persistentvolumeclaims/-0001", "pods/-0001"  # the first claim and its consumer pod (vcc-...-0001)


def _run(kubesim_factory: Any, run_cp: Any, creates: list[str], deletes: list[str], consumer: bool) -> Timeline:
    faults = {"failCreates": [{"match": m, "status": 500, "times": 1} for m in creates],
              "failDeletes": [{"match": m, "status": 500, "times": 1} for m in deletes]}
    sim = kubesim_factory({**cluster(provision=0.01), "faults": faults}, kubelet="simulated")
    tl = run_cp(spec("volume-churn", count=12, concurrency=1, timeout=60, consumer=consumer), kube=sim)
    assert tl.errors() == 0, [o.error for o in tl.objects.values()]
    return tl


def _held(tl: Timeline, name: str) -> set[str]:
    return {end for n, end in held_points(read(tl.jsonl())) if n == name}


def _flag(tl: Timeline) -> str:
    flag, = [f for f in parse_run("volume-churn", tl.jsonl()).flags if f.startswith("RETRIED: ")]
    return flag


def test_a_claim_whose_consumer_create_and_delete_were_held_marks_both(kubesim_factory: Any, run_cp: Any) -> None:
    tl = _run(kubesim_factory, run_cp, [POD], [CLAIM], consumer=True)
    first = sorted(tl.objects)[0]
    assert tl.retried == {first: [f"create consumer: 500 Internal Server Error ({HELD_SHORT})",
                                  f"delete: 500 Internal Server Error ({HELD_SHORT})"]}, tl.retried
    assert {"consumer_running", "gone", "pv_gone"} <= _held(tl, first), _held(tl, first)
    flag = _flag(tl)
    assert "pv_deleted_max_ms" in flag.split(";")[0], flag  # before: consumer_running's only, the delete said exact
    assert "2 from the first attempt" in flag and "1 object(s)' 2 calls were refused" in flag, flag


def test_a_consumers_reason_does_not_replace_its_claims_held_create(kubesim_factory: Any, run_cp: Any) -> None:
    tl = _run(kubesim_factory, run_cp, [CLAIM, POD], [], consumer=True)
    first = sorted(tl.objects)[0]
    assert tl.retried == {first: [f"create: 500 Internal Server Error ({HELD_SHORT})",
                                  f"create consumer: 500 Internal Server Error ({HELD_SHORT})"]}, tl.retried
    assert {"api_accepted", "bound", "consumer_running"} <= _held(tl, first), _held(tl, first)
    assert "accepted_max_ms" in _flag(tl).split(";")[0], _flag(tl)  # before: the create's phases said exact


def test_the_first_object_named_is_the_first_in_run_order(kubesim_factory: Any, run_cp: Any) -> None:
    faults = {"failCreates": [{"match": "persistentvolumeclaims/-0001", "status": 429, "times": 1}],
              "failDeletes": [{"match": "persistentvolumeclaims/-0002", "status": 500, "times": 1}]}
    sim = kubesim_factory({**cluster(provision=0.01), "faults": faults}, kubelet="none")
    tl = run_cp(spec("volume-churn", count=6, concurrency=1, timeout=60), kube=sim)
    one, two = sorted(tl.objects)[:2]
    assert tl.retried == {one: "create: 429 Too Many Requests",
                          two: f"delete: 500 Internal Server Error ({HELD})"}, tl.retried
    assert list(tl.retried) == [one, two]  # before: [two, one], the deletes' objects first
    assert f"(first: {one}: create: 429 Too Many Requests, sent again " in _flag(tl), _flag(tl)
    # the previous runner's timeline (one reason an object, the deletes' objects first) reads alike
    lines = [json.loads(line) for line in tl.jsonl().splitlines()]
    lines[-1]["retried"] = {two: tl.retried[two], one: tl.retried[one]}
    old = "".join(json.dumps(line) + "\n" for line in lines)
    flag, = [f for f in parse_run("volume-churn", old).flags if f.startswith("RETRIED: ")]
    assert flag == _flag(tl), (flag, _flag(tl))
    assert held_points(read(old)) == held_points(read(tl.jsonl())) and (two, "gone") in held_points(read(old))


def test_a_nomad_volume_whose_create_and_delete_were_held_marks_both(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory({"faults": {"failRequests": [
        {"request": "PUT /v1/volume/csi/:id/create", "status": 500, "times": 1},
        {"request": "DELETE /v1/volume/csi/:id/delete", "status": 500, "times": 1}]}})
    tl = run_cp(spec("volume-churn", env="nomad", count=12, concurrency=1, timeout=60, plugin_id="hostpath"),
                nomad=sim)
    first = sorted(tl.objects)[0]
    assert tl.retried == {first: [f"create: 500 No cluster leader ({HELD_SHORT})",
                                  f"delete: 500 No cluster leader ({HELD_SHORT})"]}, tl.retried
    assert {"api_accepted", "gone"} <= _held(tl, first), _held(tl, first)
    named = _flag(tl).split(";")[0]
    assert "pv_deleted_max_ms" in named and "provisioned_max_ms" in named, _flag(tl)  # before: the create's only


def test_each_re_timed_calls_wait_follows_that_call(kubesim_factory: Any, run_cp: Any) -> None:
    """Review r4: the flag put the create's wait after the object's last reason (`create: 429 ... and delete: 429
    ..., sent again 1.01 s after the first attempt`). Now each re-timed call's wait follows its own reason; the held
    consumer create, not re-timed, has none."""
    faults = {"failCreates": [{"match": CLAIM, "status": 429, "times": 1}, {"match": POD, "status": 500, "times": 1}],
              "failDeletes": [{"match": CLAIM, "status": 429, "times": 1}]}
    sim = kubesim_factory({**cluster(provision=0.01), "faults": faults}, kubelet="simulated")
    tl = run_cp(spec("volume-churn", count=12, concurrency=1, timeout=60, consumer=True), kube=sim)
    first = sorted(tl.objects)[0]
    t = tl.objects[first].t
    create, delete = (t[p] - t[f"first_{p}"] for p in ("request_sent", "delete_requested"))
    assert (f"(first: {first}: create: 429 Too Many Requests, sent again {create:.2f} s after the first attempt and "
            f"create consumer: 500 Internal Server Error ({HELD_SHORT}) and delete: 429 Too Many Requests, sent again "
            f"{delete:.2f} s after the first attempt); 2 timed from the attempt that succeeded") in _flag(tl), _flag(tl)
