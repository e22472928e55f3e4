"""A step of the host's wall clock while runs are in flight (an NTP step, a VM resumed).

A run's deadline (CampaignState.due) is wall-clock: its dispatch time + timeout + grace
(`PODTAX_RUNNER_REPORT_GRACE_S`), compared with the time at each tick. A forward step larger than that expired every
run in flight as no-report, and each was requested again while the first attempt may still be running (a measurement
made twice, or a run on a busy node). So each tick compares how far the wall clock advanced since the previous tick
with how far the monotonic clock did: a difference beyond JUMP_S (either way) is a step, said in a warning, and the
times the deadlines of the runs in flight count from (dispatched, reported, resumed) are moved by it, so each is as
far away in elapsed time as before; so does the spacing between runs. Every time recorded in the state (a dispatch,
a report, an outcome, the end of a restart's catch-up) is read through the same reading (Handlers.now), after the
step is taken out: read before it, it was moved a second time. The runs in flight moved are saved then, so a runner
restarted after a step counts their deadlines from the moved times; a step while it is down (no monotonic reading
spans a restart) is not seen: CampaignState.resumed gives every run in flight its grace from the restart, and the
spacing counts from the restart at the latest (a finished run's time is not moved: after a backward step, in the
future).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from datetime import datetime, timedelta

from podtax import events

from podtax_runner.state import CampaignState

log = logging.getLogger("podtax.runner")
JUMP_S = 5.0  # a difference of the two clocks' advances beyond this is a step of the wall clock


def monotonic() -> float:
    return time.monotonic()


class Steps:
    """The wall and monotonic clocks as last read: by Handlers.now, at each tick and each time recorded in between."""

    def __init__(self) -> None:
        self.last: tuple[datetime, float] | None = None
        self.moved: list[CampaignState] = []  # the states a step moved, to be saved (Handlers.now)

    def now(self, states: Iterable[CampaignState]) -> datetime:
        """The wall-clock time now; a step since the previous reading moves the runs in flight of `states`."""
        wall, mono = events.now(), monotonic()
        last, self.last = self.last, (wall, mono)
        if last is not None:
            step = (wall - last[0]).total_seconds() - (mono - last[1])
            if abs(step) > JUMP_S:
                states = list(states)
                moved = move(states, timedelta(seconds=step))
                self.moved += states
                log.warning("the wall clock stepped %+.0f s (from %s to %s) in %.1f s: the deadlines of the %d runs in "
                            "flight moved with it (an NTP step or a VM resumed? keep the host's clock in sync)",
                            step, last[0].isoformat(timespec="seconds"), wall.isoformat(timespec="seconds"),
                            mono - last[1], moved)
        return wall


def move(states: Iterable[CampaignState], delta: timedelta) -> int:
    """Move the times the deadlines of the runs in flight and the spacing count from by `delta`; the number of runs."""
    return sum(state.moved(delta) for state in states)
