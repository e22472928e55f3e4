"""The restart policy of `podtax up`: a rate with exponential backoff, not a lifetime count."""

from __future__ import annotations

import pytest
from podtax.supervise import RestartPolicy


def test_a_lifetime_of_spaced_crashes_never_stops_the_child() -> None:
    """The fault: the fourth crash of one service, at any time, stopped everything."""
    p = RestartPolicy(max_restarts=3, window_s=60)
    for hour in range(10):
        assert p.on_exit(now=hour * 3600.0 + 5, started=hour * 3600.0) is not None


def test_a_crash_loop_is_stopped() -> None:
    p = RestartPolicy(max_restarts=3, window_s=60)
    delays = [p.on_exit(now=float(t), started=float(t) - 1) for t in range(4)]
    assert delays[:3] == [0.5, 1.0, 2.0] and delays[3] is None


@pytest.mark.parametrize(("uptimes", "expected"), [
    ([1, 1, 1, 1], [0.5, 1.0, 2.0, 4.0]),   # quick crashes: exponential backoff
    ([1, 1, 120, 1], [0.5, 1.0, 0.5, 1.0]),  # a long healthy stretch resets the backoff
])
def test_backoff_doubles_and_resets_after_a_healthy_stretch(uptimes: list[float], expected: list[float]) -> None:
    p = RestartPolicy(max_restarts=10, window_s=1000, reset_s=60)
    now, delays = 0.0, []
    for up in uptimes:
        started, now = now, now + up
        delays.append(p.on_exit(now=now, started=started))
    assert delays == expected


def test_backoff_is_capped() -> None:
    p = RestartPolicy(max_restarts=100, window_s=1, base_s=1, max_s=8)
    delays = [p.on_exit(now=t * 10.0, started=t * 10.0 - 1) for t in range(8)]
    assert max(d for d in delays if d is not None) == 8
