"""`P_min_ms` and `P_avg_ms` beside each phase's percentiles (kube-burner's pvcLatency and podLatency report min and
avg too), over the same objects: those that completed the phase and those given up while waiting in it, at the
time they were given up. With one such object the mean is a lower bound (named in LOWER_BOUND), the least value only
when no completed time lies below it; a phase no object completed has neither, never a zero. Worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.parsers import parse_run

from tests.parsers.test_timeline import K8S_KEYS, K8S_T, header, lines, obj, summary


def _volumes(ts: list[tuple[float, ...]]) -> list[dict[str, Any]]:
    return [obj(f"v{i}", dict(zip(K8S_KEYS, t, strict=True))) for i, t in enumerate(ts, 1)]


def _given_up(name: str, t: dict[str, float], waiting: str) -> dict[str, Any]:
    return obj(name, t, error=f"not {waiting} after 10.0 s since request_sent: took longer than 10.0 s, given up")


ALL_DONE = lines(header(), *_volumes(K8S_T), summary())
# v4 given up 9.5 s after its create, provisioned but never Bound: its bound time 9.5 s counts, a lower bound
BOUND_STUCK = lines(header(), *_volumes(K8S_T[:3]),
                    _given_up("v4", {"request_sent": 0.5, "api_accepted": 0.54, "pv_created": 0.9, "given_up": 10.0},
                              "Bound"), summary(errors=1))
# v4 given up 50 ms after its create, accepted but never provisioned: 50 ms is below every completed time, so the
# least value rests on it (a lower bound too)
EARLY = lines(header(), *_volumes(K8S_T[:3]),
              _given_up("v4", {"request_sent": 0.5, "api_accepted": 0.54, "given_up": 0.55}, "provisioned"),
              summary(errors=1))
ONE = lines(header(), *_volumes(K8S_T[1:2]), summary())
# consumers asked for: v2's never ran, given up waiting; no volume's consumer ran, so consumer_running has no figure
NO_CONSUMER_RAN = lines(header(consumer=True), *_volumes(K8S_T[:1]),
                        _given_up("v2", {"request_sent": 0.0, "api_accepted": 0.02, "pv_created": 0.2, "bound": 0.3,
                                         "given_up": 10.0}, "Running"), summary(errors=1))

CASES: dict[str, tuple[str, dict[str, float], set[str], set[str]]] = {
    # log, expected figures (ms), figures that must be absent, the min/avg figures named LOWER_BOUND
    "every object done": (ALL_DONE, {
        "accepted_min_ms": 10.0, "accepted_avg_ms": 25.0,  # 10, 20, 30, 40
        "provisioned_min_ms": 100.0, "provisioned_avg_ms": 250.0,  # 100, 200, 300, 400
        "bound_min_ms": 200.0, "bound_avg_ms": 375.0,  # 200, 300, 400, 600
        "deleted_min_ms": 20.0, "deleted_avg_ms": 67.5,  # 50, 100, 20, 100
        "pv_deleted_min_ms": 100.0, "pv_deleted_avg_ms": 250.0,  # 100, 300, 100, 500
    }, {"consumer_running_min_ms", "consumer_running_avg_ms"}, set()),
    "one given up late": (BOUND_STUCK, {
        "accepted_min_ms": 10.0, "accepted_avg_ms": 20.0,  # v4 got through accepted: not in it (as its max)
        "provisioned_min_ms": 100.0, "provisioned_avg_ms": 200.0,
        "bound_min_ms": 200.0, "bound_avg_ms": (200 + 300 + 400 + 9500) / 4,  # v4's 9.5 s, a lower bound
        "bound_max_ms": 9500.0,
        "deleted_avg_ms": 170 / 3,  # 50, 100, 20
    }, set(), {"bound_avg_ms"}),
    "one given up early": (EARLY, {
        "provisioned_min_ms": 50.0, "provisioned_avg_ms": (50 + 100 + 200 + 300) / 4,
        "bound_min_ms": 50.0, "bound_avg_ms": (50 + 200 + 300 + 400) / 4,
        "accepted_min_ms": 10.0, "accepted_avg_ms": 20.0,
    }, set(), {"provisioned_min_ms", "provisioned_avg_ms", "bound_min_ms", "bound_avg_ms"}),
    "one object": (ONE, {
        "provisioned_min_ms": 200.0, "provisioned_avg_ms": 200.0, "provisioned_p50_ms": 200.0,
        "provisioned_max_ms": 200.0, "pv_deleted_min_ms": 300.0, "pv_deleted_avg_ms": 300.0,
    }, set(), set()),
    "a phase no object completed": (NO_CONSUMER_RAN, {
        "provisioned_min_ms": 100.0, "provisioned_avg_ms": 100.0,
    }, {"consumer_running_min_ms", "consumer_running_avg_ms", "consumer_running_max_ms"}, set()),
}


def _lower_bound(flags: tuple[str, ...]) -> set[str]:
    flag = next((f for f in flags if f.startswith("LOWER_BOUND: ")), "LOWER_BOUND: ;")
    return {m for m in flag.removeprefix("LOWER_BOUND: ").split(";")[0].split(", ") if m}


@pytest.mark.parametrize("case", CASES)
def test_min_and_avg_count_the_objects_the_percentiles_count(case: str) -> None:
    log, want, absent, bounded = CASES[case]
    parsed = parse_run("volume-churn", log)
    values = parsed.values()
    got = {m: values.get(m) for m in want}
    assert got == pytest.approx(want, abs=1e-9), got
    assert not absent & set(values), sorted(absent & set(values))
    assert {m for m in _lower_bound(parsed.flags) if m.endswith(("_min_ms", "_avg_ms"))} == bounded, parsed.flags
    kinds = {(m.unit, m.higher_is_better) for m in parsed.metrics if m.name.endswith(("_min_ms", "_avg_ms"))}
    assert kinds == {("ms", False)}, kinds


def test_a_time_seen_after_a_dropped_watch_makes_min_and_avg_upper_bounds() -> None:
    gap = {"watch": "persistentvolumeclaims", "start": 0.15, "end": 0.35, "late": {"v3": ["bound"]}}
    parsed = parse_run("volume-churn", lines(header(), *_volumes(K8S_T), summary(watch_gaps=[gap])))
    flag = next(f for f in parsed.flags if f.startswith("WATCH_GAP: "))
    named = set(flag.removeprefix("WATCH_GAP: ").split(";")[0].split(", "))
    assert {"bound_min_ms", "bound_avg_ms"} <= named and not {"provisioned_min_ms", "provisioned_avg_ms"} & named, flag


def test_pod_startup_has_min_and_avg_of_every_condition_a_pod_given_up_a_lower_bound() -> None:
    keys = ("request_sent", "scheduled", "initialized", "started", "containers_ready", "ready", "delete_requested",
            "gone")
    ts = [(0.0, 0.01, 0.02, 0.5, 0.55, 0.6, 2.0, 2.5), (0.1, 0.13, 0.15, 0.7, 0.8, 0.9, 2.0, 2.2)]
    pods = [obj(f"p{i}", dict(zip(keys, t, strict=True))) for i, t in enumerate(ts)]
    values = parse_run("pod-startup", lines(header("pod-startup"), *pods, summary())).values()
    got = {m: values[m] for m in ("scheduled_min_ms", "scheduled_avg_ms", "initialized_min_ms", "initialized_avg_ms",
                                  "containers_ready_min_ms", "containers_ready_avg_ms", "ready_min_ms", "ready_avg_ms")}
    assert got == pytest.approx({"scheduled_min_ms": 10.0, "scheduled_avg_ms": 20.0, "initialized_min_ms": 20.0,
                                 "initialized_avg_ms": 35.0, "containers_ready_min_ms": 550.0,
                                 "containers_ready_avg_ms": 625.0, "ready_min_ms": 600.0, "ready_avg_ms": 700.0},
                                abs=1e-9), got
    # p2 scheduled, then given up at 10 s: in each phase it was waiting in, its 10 s counts (the mean a lower bound)
    stuck = _given_up("p2", {"request_sent": 0.0, "scheduled": 0.01, "given_up": 10.0}, "Initialized")
    parsed = parse_run("pod-startup", lines(header("pod-startup"), *pods, stuck, summary(errors=1)))
    values = parsed.values()
    got = {m: values[m] for m in ("scheduled_min_ms", "scheduled_avg_ms", "ready_min_ms", "ready_avg_ms")}
    assert got == pytest.approx({"scheduled_min_ms": 10.0, "scheduled_avg_ms": 20.0,  # p2 got through: not in it
                                 "ready_min_ms": 600.0, "ready_avg_ms": (600 + 800 + 10_000) / 3}, abs=1e-9), got
    bounded = {m for m in _lower_bound(parsed.flags) if m.endswith(("_min_ms", "_avg_ms"))}
    assert bounded == {f"{p}_avg_ms" for p in ("initialized", "started", "containers_ready", "ready")}, parsed.flags
