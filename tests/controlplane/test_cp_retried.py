"""A call refused with 429 (or a 5xx) and sent again: the client waits what the server's Retry-After asks, and the
object is timed from the attempt that succeeded, flagged RETRIED. Before, the client waited 0.05 then 0.2 s
whatever the answer said (a real API server's 429 says 1 s: every retry met the same throttle), and the object's
latency held both refused attempts and the waits, unflagged (an audit: a claim bound in 260 ms among claims of
2 ms). Against kubesim's fault failCreates (its 429 as the API server writes it: reason TooManyRequests,
details.retryAfterSeconds and the Retry-After header), through the real runner, the real kubernetes client and
the timeline parser."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from podtax.parsers import timeline as parser
from podtax.phases import phases_of as tl_phases
from podtax_runner.controlplane.timeline import HELD, Timeline

from tests.controlplane.conftest import cluster, spec


def test_a_throttled_create_waits_its_retry_after_and_is_timed_from_the_attempt_that_succeeded(
        kubesim_factory: Any, run_cp: Any, caplog: pytest.LogCaptureFixture) -> None:
    faults = {"failCreates": [{"match": "persistentvolumeclaims/-0002", "status": 429, "times": 2}]}
    sim = kubesim_factory({**cluster(), "faults": faults}, kubelet="none")
    caplog.set_level(logging.WARNING, logger="podtax.runner.retry")  # `podtax volumes cleanup` quiets it, process-wide
    tl = run_cp(spec("volume-churn", count=5, concurrency=2, timeout=30), kube=sim)
    assert tl.errors() == 0
    throttled = next(r for n, r in tl.objects.items() if n.endswith("-0002"))
    # two 429s, each saying Retry-After: 1: the third attempt went at least 2 s after the first
    assert throttled.t["request_sent"] - throttled.t["first_request_sent"] >= 2.0, throttled.t
    assert throttled.t["api_accepted"] >= throttled.t["request_sent"]
    assert tl.retried == {throttled.name: "create: 429 Too Many Requests"}
    assert tl.apiserver and tl.apiserver["after"].get("POST persistentvolumeclaims 429") == 2
    flags = parser.parse(tl.jsonl(), "volume-churn").flags
    # re-timed only: exact figures, no upper bound named
    retried = [f for f in flags if f.startswith("RETRIED: no figure; 1 object(s)")]
    assert retried and throttled.name in retried[0] and "429 Too Many Requests" in retried[0], flags
    # each retry is logged in one line with the server's words (it was the client's dump: status, reason, every
    # header and the body, over four lines)
    said = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
    assert len(said) == 2 and all("\n" not in m and "429 Too Many Requests: Too many requests" in m for m in said), said
    untouched = [r for r in tl.objects.values() if r is not throttled]
    assert all("first_request_sent" not in r.t for r in untouched)


def test_a_retried_consumer_pod_create_is_said_to_be_in_consumer_running(kubesim_factory: Any, run_cp: Any) -> None:
    """consumer_running is timed from the claim's create: a consumer pod's create sent again after a 429 (1 s) is
    in it, and cannot be re-timed; before, nothing said so."""
    faults = {"failCreates": [{"match": "pods/-0002", "status": 429, "times": 1}]}
    sim = kubesim_factory({**cluster(), "faults": faults}, kubelet="none")
    tl = run_cp(spec("volume-churn", count=4, concurrency=2, timeout=30, consumer=True), kube=sim)
    assert tl.errors() == 0
    (name, why), = tl.retried.items()
    assert name.endswith("-0002") and why == f"create consumer: 429 Too Many Requests ({HELD})", tl.retried
    assert "first_request_sent" not in tl.objects[name].t
    flags = parser.parse(tl.jsonl(), "volume-churn").flags
    # its consumer_running holds the wait: the figures resting on it are named as upper bounds (the analyzer reads
    # the names before the `;`, as WATCH_GAP's)
    assert any(f.startswith("RETRIED: consumer_running_") and "consumer_running_max_ms" in f.split(";")[0]
               and "bound_" not in f.split(";")[0] and "0 timed from the attempt that succeeded" in f
               and "1 from the first attempt (their phases hold the wait: upper bounds)" in f for f in flags), flags


def test_a_create_refused_at_every_attempt_fails_and_is_not_said_timed(kubesim_factory: Any, run_cp: Any) -> None:
    """Its attempts all 429 (THROTTLED_ATTEMPTS of them): the object failed (ERRORS), and RETRIED, "timed from the
    attempt that succeeded", does not name it (it did, through podtax up: `podtax results` showed ERRORS RETRIED)."""
    faults = {"failCreates": [{"match": "persistentvolumeclaims/-0002", "status": 429, "times": 0, "retryAfter": 0}]}
    sim = kubesim_factory({**cluster(), "faults": faults}, kubelet="none")
    tl = run_cp(spec("volume-churn", count=5, concurrency=2, timeout=30), kube=sim)
    assert [n[-5:] for n, r in tl.objects.items() if r.error] == ["-0002"]
    flags = parser.parse(tl.jsonl(), "volume-churn").flags
    assert any(f.startswith("ERRORS: 1 of 5") for f in flags) and not any(f.startswith("RETRIED") for f in flags), \
        flags


@pytest.mark.parametrize(("status", "reason", "after"), [(429, "TooManyRequests", "1"), (403, "Forbidden", None),
                                                         (500, "InternalError", None)])
def test_a_failed_create_is_answered_as_the_api_server_words_it(kubesim_factory: Any, status: int, reason: str,
                                                                after: str | None) -> None:
    sim = kubesim_factory({**cluster(), "faults": {"failCreates": [{"match": "configmaps/", "status": status}]}},
                          kubelet="none")
    core = client.CoreV1Api(sim.api_client())
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    assert err.value.status == status and err.value.headers.get("Retry-After") == after
    assert f'"reason":"{reason}"' in err.value.body.replace(" ", ""), err.value.body


def test_a_retried_call_whose_refused_attempt_took_effect_keeps_its_first_time() -> None:
    """A delete answered 500 by a proxy after the API server deleted the claim: its DELETED event came before the
    retry (answered 404). Re-timed from the retry, `deleted` would be negative and the parser refuse the run."""
    tl = Timeline("volume-churn", "kubernetes", {"count": 1}, "watch")
    tl.add("c")
    for at, point in enumerate(("request_sent", "api_accepted", "pv_created", "bound", "delete_requested", "gone",
                                "pv_gone")):
        tl.mark("c", point, at / 100)
    tl.resender("c", "delete_requested", "delete")(ApiException(status=500, reason="Internal Server Error"))
    assert "first_delete_requested" not in tl.objects["c"].t
    assert tl.retried["c"] == f"delete: 500 Internal Server Error ({HELD})"
    parsed = parser.parse(tl.jsonl(), "volume-churn")  # not refused as a negative phase
    assert any(f.startswith("RETRIED: deleted_p50_ms") and "; 1 object(s)" in f for f in parsed.flags), parsed.flags


def test_a_throttled_first_create_stays_in_the_makespans(kubesim_factory: Any, run_cp: Any) -> None:
    """The first claim's create meets two 429s (Retry-After 1 s each): the run's 3 claims took over 2 s from its first
    attempt, and provisioned_makespan_s (volume-churn's primary metric) says so. Before, the makespan started at the
    retry that succeeded (the re-timed request_sent): 5 ms, as if nothing had been throttled."""
    faults = {"failCreates": [{"match": "persistentvolumeclaims/-0001", "status": 429, "times": 2}]}
    sim = kubesim_factory({**cluster(), "faults": faults}, kubelet="none")
    tl = run_cp(spec("volume-churn", count=3, concurrency=1, timeout=30), kube=sim)
    assert tl.errors() == 0 and len(tl.retried) == 1, tl.retried
    first = min(r.t.get("first_request_sent", r.t["request_sent"]) for r in tl.objects.values())
    metrics = {m.name: m.value for m in parser.parse(tl.jsonl(), "volume-churn").metrics}
    for phase in tl_phases("volume-churn", "kubernetes"):
        if phase.start == "request_sent" and not phase.optional:  # accepted, provisioned, bound
            last = max(r.t[phase.end] for r in tl.objects.values())
            assert metrics[f"{phase.name}_makespan_s"] == pytest.approx(last - first), phase.name
            assert metrics[f"{phase.name}_makespan_s"] >= 2.0, metrics


def test_an_object_sent_again_then_given_up_is_named_with_its_lower_bound() -> None:
    """Its create went through at the second attempt (a 429 first), then it never bound and was given up: its given-up
    time counts from the retry (LOWER_BOUND's lower bound still), and RETRIED names it as given up later. Before
    (ecf01ec's filter: objects without an error only), RETRIED left it out and nothing said its time began at the
    retry."""
    tl = Timeline("volume-churn", "kubernetes", {"count": 2}, "watch")
    for name in ("a", "b"):
        tl.add(name)
        tl.mark(name, "request_sent", 0.0)
    tl.now = lambda: 1.0  # type: ignore[method-assign]
    tl.resender("a", "request_sent", "create")(ApiException(status=429, reason="Too Many Requests"))
    for at, point in enumerate(("api_accepted", "pv_created", "bound", "delete_requested", "gone", "pv_gone"), 1):
        tl.mark("b", point, at / 100)
    tl.mark("a", "api_accepted", 1.01)
    tl.mark("a", "given_up", 11.0)
    tl.fail("a", "not Bound after 10.0 s since request_sent: given up, the run went on")
    flags = parser.parse(tl.jsonl(), "volume-churn").flags
    retried = [f for f in flags if f.startswith("RETRIED: no figure; 1 object(s)")]
    assert retried and "first: a: create: 429 Too Many Requests, sent again 1.00 s after" in retried[0], flags
    assert "1 of them given up later (timed from the retry until then: lower bounds)" in retried[0], retried
    assert any(f.startswith("LOWER_BOUND: ") for f in flags), flags
