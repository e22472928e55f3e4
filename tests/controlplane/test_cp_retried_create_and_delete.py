"""An object whose create was sent again (429: re-timed from the retry) and whose delete was then sent again too
(500: held, timed from the first attempt) is named by its delete in a clean run's RETRIED, its delete figures upper
bounds (review r11 on 9c3d5be9): the summary's `retried` held one reason an object, and it kept the create's, so
the held delete's time (58.6 ms among 0.9-6.8 ms: deleted_max_ms) was shown exact under 'RETRIED: no figure', its
phases rows not upper_bound. Each call now keeps its reason (review r14: test_cp_retried_each_call); a run whose
deletes were refused drops the delete's in the parser (its delete phases are absent there:
test_cp_delete_refused_failed_before). Through the real kubernetes client against kubesim and the real Nomad
client against nomadsim, the real executor and parser."""

from __future__ import annotations

from typing import Any

from podtax.parsers import parse_run
from podtax.parsers.timeline_flags import held_points
from podtax.parsers.timeline_records import read
from podtax_runner.controlplane.timeline import HELD_SHORT, Timeline

from tests.controlplane.conftest import cluster, spec


def _delete_named(tl: Timeline, create: str, delete: str, ends: set[str]) -> None:
    first = sorted(tl.objects)[0]
    assert "first_request_sent" in tl.objects[first].t, tl.objects[first].t  # its create was re-timed
    assert tl.retried == {first: [f"create: {create}", f"delete: {delete} ({HELD_SHORT})"]}, tl.retried
    text = tl.jsonl()
    assert {end for name, end in held_points(read(text)) if name == first} == ends
    parsed = parse_run("volume-churn", text)
    flag, = [f for f in parsed.flags if f.startswith("RETRIED: ")]
    named = flag.split(";")[0]
    assert named != "RETRIED: no figure" and "pv_deleted_max_ms" in named, flag
    t = tl.objects[first].t  # the create's wait follows the create (review r4: it followed the delete)
    waited = f"sent again {t['request_sent'] - t['first_request_sent']:.2f} s after the first attempt"
    assert f"(first: {first}: create: {create}, {waited} and delete: {delete} ({HELD_SHORT})); " in flag, flag
    assert "1 timed from the attempt that succeeded" in flag and "1 from the first attempt" in flag, flag


def test_a_held_delete_of_a_claim_whose_create_was_sent_again_is_an_upper_bound(kubesim_factory: Any,
                                                                                 run_cp: Any) -> None:
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {
        "failCreates": [{"match": "persistentvolumeclaims/-0001", "status": 429, "times": 1}],
        "failDeletes": [{"match": "persistentvolumeclaims/-0001", "status": 500, "times": 1}]}})
    tl = run_cp(spec("volume-churn", count=12, concurrency=1, timeout=60), kube=sim)
    _delete_named(tl, "429 Too Many Requests", "500 Internal Server Error", {"gone", "pv_gone"})


def test_a_held_delete_of_a_nomad_volume_whose_create_was_sent_again_is_an_upper_bound(nomadsim_factory: Any,
                                                                                         run_cp: Any) -> None:
    sim = nomadsim_factory({"faults": {"failRequests": [
        {"request": "PUT /v1/volume/csi/:id/create", "status": 429, "times": 1},
        {"request": "DELETE /v1/volume/csi/:id/delete", "status": 500, "times": 1}]}})
    run = spec("volume-churn", env="nomad", count=12, concurrency=1, timeout=60, plugin_id="hostpath")
    tl = run_cp(run, nomad=sim)
    # two reasons: each cut to 75 characters; Nomad's deleted and pv_deleted both end at gone
    _delete_named(tl, "429 Your IP is issuing too many concurrent connections, please rate", "500 No cluster leader",
                  {"gone"})
