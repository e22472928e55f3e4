"""Waiting for a run's objects to get through a phase: stragglers given up (with what they said) so the run goes on
without them, or the run aborted at its timeout saying how many were stuck where."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

from podtax_runner.controlplane.apierrors import too_many_errors
from podtax_runner.controlplane.common import WAIT_STEP_S, Aborted, Context, allowance, patience
from podtax_runner.controlplane.timeline import Timeline

log = logging.getLogger("podtax.runner.controlplane")
QUOTED = 10  # an abort's reason quotes the first of at most this many stuck objects that said something
SINCE = {"bind": "request_sent", "start": "request_sent", "delete": "delete_requested"}  # where a wait's phases start


def wait_for(ctx: Context, tl: Timeline, phase: str, pending: Callable[[], dict[str, str]], count: int,
             said: Callable[[list[str]], dict[str, str]] = lambda names: {}) -> None:
    """Wait until `pending()` (each object still waited for -> what it lacks: "not Bound") is empty.
    `said(names)`: what each of those objects last said holds it (`the pod said: Unschedulable: ...`), those with
    nothing left out; asked once per give-up for the objects given up, added to their errors, and once at the abort
    for the first QUOTED stuck ones, the first's words added to the abort's reason (kevents: one events list each).

    One stuck object must not cost the run its other objects' timings (kube-burner's pvcLatency drops
    the claims that never reach Bound and keeps the rest): once nothing progressed for `patience` (or for
    the stall window when no more than that is left of the run, so it can still delete everything), some
    object got through and the stuck ones with those already failed are within the error allowance
    (too_many_errors), each stuck one is failed on the timeline with what it lacks and its end point
    `given_up` (when it was given up: its phase took longer than that), and the run goes on. More stuck
    than that: the wait goes on until the deadline and raises Aborted("timeout") saying how many were
    stuck in which phase; Aborted("stopped") when the run is stopped. Before either, once per quiet spell, the run's
    watches silent all that time are listed again (ctx.resync): a silent watch's objects were not stuck."""
    started = last_change = time.monotonic()
    resynced = None
    slowest = 0.0
    given_up: set[str] = set()
    last: set[str] = set()
    while stuck := {n: what for n, what in pending().items() if n not in given_up}:
        now = time.monotonic()
        if set(stuck) != last:
            if last - set(stuck):
                slowest = now - started
            last, last_change = set(stuck), now
        quiet, wait_s = now - last_change, patience(ctx, slowest)
        due = quiet >= ctx.stall_s and (quiet >= wait_s or ctx.remaining() <= ctx.stall_s)
        if due and resynced != last_change:
            resynced = last_change
            if ctx.resync(quiet):
                continue
        if due and _may_give_up(tl, stuck, count):
            why = f"{wait_s:g} s" if quiet >= wait_s else f"{quiet:.1f} s, the run's end near"
            since, words = SINCE.get(phase, ""), said(list(stuck))
            for name, what in stuck.items():
                t = tl.objects[name].t
                took = tl.now() - t[since] if since in t else now - started
                w = words.get(name)
                tl.give_up(name, f"{what} after {took:.1f} s since {since or 'the wait began'} ({now - started:.1f} "
                                 f"s of the {phase} wait; no object progressed for {why}): took longer than "
                                 f"{took:.1f} s, given up, the run went on" + (f"; {w}" if w else ""))
            given_up.update(stuck)
            log.warning("run %s: gave up on %d object(s) stuck in the %s wait", ctx.run.run_id, len(stuck), phase)
            continue
        try:
            ctx.check()
        except Aborted as exc:
            if exc.reason != "timeout":
                raise
            whats = Counter(stuck.values())
            first = next(iter(said(list(stuck)[:QUOTED]).values()), None)
            raise Aborted("timeout", f"{exc.detail}: {len(stuck)} of {count} objects stuck in the {phase} wait ("
                          + ", ".join(f"{n} {what}" for what, n in whats.most_common())
                          + (f"; first: {first}" if first else "")
                          + f"); a run goes on without its stuck objects only when they are at most "
                          f"{allowance(count)} (max(10, 10 %)) and others got through") from None
        time.sleep(WAIT_STEP_S)


def _may_give_up(tl: Timeline, stuck: dict[str, str], count: int) -> bool:
    """Some object got through, and the stuck ones with those already failed are within the allowance."""
    failed = tl.errors() + sum(1 for n in stuck if tl.objects[n].error is None)
    return failed < count and not too_many_errors(failed, count)
