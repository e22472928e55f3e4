"""When `podtax up` restarts a crashed child: a rate limit with exponential backoff, not a lifetime count.

A child may crash at most `max_restarts` times within `window_s` seconds; each restart waits twice as
long as the previous one (from `base_s` up to `max_s`), and a child that stayed up for `reset_s`
starts again from `base_s`. Crashes spread over hours never stop the system; a crash loop does, with
a message. Pure: the caller passes the clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class RestartPolicy:
    max_restarts: int = 5
    window_s: float = 60.0
    base_s: float = 0.5
    max_s: float = 30.0
    reset_s: float = 60.0
    crashes: deque[float] = field(default_factory=deque)
    delay_s: float = 0.0

    def on_exit(self, now: float, started: float) -> float | None:
        """A child that started at `started` exited at `now`: seconds to wait before restarting it, or None
        when it crashed too often (more than max_restarts within window_s) and should not be restarted."""
        while self.crashes and self.crashes[0] <= now - self.window_s:
            self.crashes.popleft()
        self.crashes.append(now)
        if len(self.crashes) > self.max_restarts:
            return None
        if now - started >= self.reset_s:
            self.delay_s = 0.0
        self.delay_s = min(self.max_s, self.delay_s * 2 if self.delay_s else self.base_s)
        return self.delay_s

    def describe(self) -> str:
        return f"{self.max_restarts} restarts within {self.window_s:g} s"
