"""A watch that goes silent (its connection open, nothing more delivered: no event, no bookmark), as a half-open
connection to an API server restarted or upgraded behind a load balancer. Before, the run's wait saw every object
stuck and the run ended at its timeout blaming them: 'the run did not finish within 30 s: 6 of 6 objects stuck in the
bind wait (6 not Bound; first: its newest event: ProvisioningSucceeded ...)', every claim Bound all along. Now a wait
about to give objects up or let the run time out first closes and lists again each watch that delivered nothing for
as long as nothing progressed (kubesim sends a bookmark every 5 s, a real API server every minute): the list sees
what the watch missed, timed late in a gap from when the watch went silent (WATCH_GAP: upper bounds), and the run goes
on. Against kubesim's planted silence (faults dropWatches with silent: true), through the real runner's executor, the
real kubernetes client and the timeline parser."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from podtax.parsers import timeline as parser

from tests.controlplane.conftest import cluster, spec

COUNT = 6
CASES = {  # template -> (the watched resource that goes silent, its watch's name, the end point it then misses)
    "volume-churn": ("persistentvolumeclaims", "claim", "bound"),
    "pod-startup": ("pods", "pod", "ready"),
}


@pytest.mark.parametrize("test", list(CASES))
def test_a_silent_watch_is_listed_again_not_its_objects_given_up(test: str, kubesim_factory: Any, run_cp: Any,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    resource, watch, point = CASES[test]
    silent = {"resource": resource, "afterEvents": 1, "silent": True}  # after its first event: nothing more
    sim = kubesim_factory({**cluster(provision=0.3, delete=0.2), "faults": {"dropWatches": [silent]}},
                          kubelet="simulated")
    with caplog.at_level(logging.WARNING, logger="podtax.runner.controlplane"):
        # a generous timeout: the run waits out a quiet spell of a tenth of it (stall_s, 12 s) before the re-list, and a
        # loaded host needs the rest to create, bind and delete (30 s ran out under heavy load); the re-list is asserted
        tl = run_cp(spec(test, count=COUNT, concurrency=COUNT, timeout=120), kube=sim)
    assert all(r.error is None and point in r.t for r in tl.objects.values()), tl.jsonl()
    gaps = [g for g in tl.watch_gaps if g["late"]]
    assert [g["watch"] for g in gaps] == [watch], tl.watch_gaps
    gap = gaps[0]
    late = {n for n, points in gap["late"].items() if point in points}
    assert len(late) >= COUNT - 1, gap  # all but perhaps the first object got there while the watch was silent
    for name in late:  # timed when the list saw it: after the watch went silent, at or before it was open again
        assert gap["start"] <= tl.objects[name].t[point] <= gap["end"], (name, tl.objects[name].t, gap)
    flag = next((f for f in parser.parse(tl.jsonl(), test).flags if f.startswith("WATCH_GAP: ")), "")
    assert f"{point}_p50_ms" in flag and f"the {watch} watch was down" in flag, flag
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith(f"watch {watch}: nothing heard for ") and "listed again" in m for m in said), said


@pytest.mark.parametrize("bookmark_s", [5.0, 60.0])
def test_a_quiet_watch_that_missed_nothing_leaves_no_gap(bookmark_s: float, kubesim_factory: Any, run_cp: Any,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    # claims bound 12 s after their create, beyond the bind wait's 10 s patience: the wait asks for a re-list of the
    # watches silent that long. With kubesim's bookmarks every 5 s none is; with a real API server's minute, the
    # PV watch (and perhaps the claim watch) is closed and listed again, the list finds nothing it missed, no gap stays
    sim = kubesim_factory(cluster(provision=12.0, delete=0.05), kubelet="none", bookmark_interval=bookmark_s)
    with caplog.at_level(logging.WARNING, logger="podtax.runner.controlplane"):
        tl = run_cp(spec("volume-churn", count=2, concurrency=2, timeout=60), kube=sim)
    assert all(r.error is None and "bound" in r.t for r in tl.objects.values()), tl.jsonl()
    assert tl.watch_gaps == [], tl.watch_gaps
    relisted = sorted(m.split(":")[0] for r in caplog.records if "nothing heard" in (m := r.getMessage()))
    # the PV watch delivered nothing since it opened (no PV before 12 s); the claim watch, its claims' creates, which a
    # loaded host may deliver after the wait began: listed again too, or not
    assert relisted == [] if bookmark_s < 10 else "watch PV" in relisted, relisted
