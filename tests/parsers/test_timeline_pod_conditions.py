"""pod-startup's phases for each condition kube-burner's podLatency reports: initialized and containers_ready beside
scheduled and ready. A pod the watch never showed in one has no figure in it (never a zero); a timeline written
before the two were recorded still parses, without them."""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, parse_run

from tests.parsers.test_timeline import header, lines, obj, summary, values

KEYS = ("request_sent", "scheduled", "initialized", "started", "containers_ready", "ready", "delete_requested", "gone")
TS = [(0.0, 0.01, 0.02, 0.5, 0.55, 0.6, 2.0, 2.5), (0.1, 0.13, 0.15, 0.7, 0.8, 0.9, 2.0, 2.2)]


def pods(ts: list[tuple[float, ...]], drop: dict[int, str] | None = None) -> list[dict[str, object]]:
    out = []
    for i, t in enumerate(ts):
        times = dict(zip(KEYS, t, strict=True))
        if drop and i in drop:
            del times[drop[i]]
        out.append(obj(f"p{i}", times))
    return out


def test_every_podlatency_condition_has_its_figures() -> None:
    v = values(lines(header("pod-startup"), *pods(TS), summary()), "pod-startup")
    assert v["initialized_p50_ms"] == pytest.approx(35.0)  # 20 and 50 ms
    assert v["initialized_max_ms"] == pytest.approx(50.0)
    assert v["containers_ready_p50_ms"] == pytest.approx(625.0)  # 550 and 700 ms
    assert v["containers_ready_p99_ms"] == pytest.approx(698.5)
    assert v["containers_ready_makespan_s"] == pytest.approx(0.8)
    assert v["ready_p50_ms"] == pytest.approx(700.0) and v["objects_ok"] == 2


def test_a_pod_never_seen_in_a_phase_has_no_figure_in_it() -> None:
    ts = [*TS, (0.2, 0.21, 0.22, 0.6, 0.65, 0.7, 2.0, 2.1)]
    v = values(lines(header("pod-startup"), *pods(ts, {0: "initialized", 2: "containers_ready"}), summary()),
               "pod-startup")
    assert v["initialized_p50_ms"] == pytest.approx(35.0)  # pods 1 and 2 (50, 20 ms), not a zero for pod 0
    assert v["containers_ready_p50_ms"] == pytest.approx(625.0)  # pods 0 and 1, none for pod 2
    assert v["objects_ok"] == 3  # they reached Ready: completed


def test_a_timeline_written_before_them_parses_without_them() -> None:
    old = pods(TS)
    for o in old:
        o["t"] = {k: s for k, s in o["t"].items() if k not in ("initialized", "containers_ready")}  # type: ignore[union-attr]
    v = values(lines(header("pod-startup"), *old, summary()), "pod-startup")
    assert v["ready_p50_ms"] == pytest.approx(700.0) and v["objects_ok"] == 2
    assert not [m for m in v if m.startswith(("initialized_", "containers_ready_"))]


def test_an_initialized_before_the_create_is_refused() -> None:
    ts = [(0.0, 0.01, -0.02, 0.5, 0.55, 0.6, 2.0, 2.5)]
    with pytest.raises(ParseFailure, match="initialized is negative"):
        values(lines(header("pod-startup"), *pods(ts), summary()), "pod-startup")


def test_a_pod_given_up_before_containers_ready_is_a_lower_bound_there_not_a_zero() -> None:
    # pods 0-4 ready; pod 5 Initialized at 30 ms, given up at 10 s not started (the runner's wait_for, its error as
    # PodStartupRun.not_ready names the first phase it lacked)
    ts = [(0.0, 0.01, 0.02 + i / 1000, 0.5, 0.55 + i / 100, 0.6 + i / 100, 20.0, 20.5) for i in range(5)]
    stuck = obj("p5", {"request_sent": 0.0, "scheduled": 0.01, "initialized": 0.03, "given_up": 10.0},
                error="not started after 10.0 s since request_sent (10.0 s of the start wait; no object progressed "
                      "for 10 s): took longer than 10.0 s, given up, the run went on")
    parsed = parse_run("pod-startup", lines(header("pod-startup"), *pods(ts), stuck, summary(errors=1)))
    v = parsed.values()
    assert v["initialized_max_ms"] == pytest.approx(24.0)  # a phase it got through: not a bound (nor in it)
    assert v["containers_ready_max_ms"] == pytest.approx(10_000.0)  # at least the time it was given up
    assert v["containers_ready_p50_ms"] == pytest.approx(575.0)  # the five that got there: 550 ... 590, and 10 s
    lower = next(f for f in parsed.flags if f.startswith("LOWER_BOUND: ")).split(";")[0]
    named = set(lower.removeprefix("LOWER_BOUND: ").split(", "))
    # the phases it never got through (started, containers_ready, ready), at the quantiles its 10 s reaches and
    # their means (which hold it); not initialized, which it got through, nor the medians or minima of the five
    phases, quantiles = ("started", "containers_ready", "ready"), ("p95", "p99", "max", "avg")
    assert named == {f"{phase}_{q}_ms" for phase in phases for q in quantiles}, named
