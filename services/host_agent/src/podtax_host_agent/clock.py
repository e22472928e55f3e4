"""This host's clock against the NATS server's, at start. Every event the agent sends carries its host's time, and
the other services refuse one more than a day ahead of theirs (event_payloads.MAX_AHEAD): a host clock 30 h ahead
had its facts dead-lettered by the runner (the CLI then said 'unknown node ... no host agent by that name' while
the agent ran), or, for a node known before, every run's log dead-lettered by the parser and each run failed as
'no result within N s + grace', the reason in the other services' logs only. The server's time is the `ts` of its
answer to a stream info request (nats-server 2.10 and later; an older server's answer has none: not checked). A
clock before 2000 (a host without a real-time clock boots in 1970 until NTP sets it) has every event refused too
(event_payloads.EARLIEST), whatever the server's time: it only got a warning and ran on, each run failing as 'no
result within N s'; it is checked first, without asking the server."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime

from podtax import subjects
from podtax.bus import Bus
from podtax.config import ConfigError
from podtax.event_payloads import EARLIEST, MAX_AHEAD

log = logging.getLogger("podtax.host_agent")
SAID_S = 60.0  # a skew beyond this is said (run times of this node against the others' and the runner's)
FIX = "whichever is wrong, set it right and keep it so (NTP: timedatectl set-ntp true; chronyc makestep)"


def _now() -> float:
    return time.time()


def server_seconds(answer: bytes) -> float | None:
    """The server's time in a JetStream API answer (epoch seconds), None when it gives none."""
    try:
        ts = json.loads(answer).get("ts")
    except (ValueError, AttributeError):
        return None
    if not isinstance(ts, str):
        return None
    ts = re.sub(r"(\.\d{6})\d+", r"\1", ts).replace("Z", "+00:00")  # nanoseconds: Python takes microseconds
    try:
        return datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return None


def utc(seconds: float) -> str:
    """Epoch `seconds` as the operator reads a clock: '2026-12-06 17:20:55 UTC'."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def too_early(now_s: float, node: str) -> str | None:
    """What to say of this host's clock reading `now_s` (epoch seconds) before event_payloads.EARLIEST (2000),
    where every event it would send is refused whatever the NATS server's time; None when it reads later."""
    if now_s >= EARLIEST.timestamp():
        return None
    return (f"the clock of node {node} reads {utc(now_s)}, before {EARLIEST.year}: the other services refuse every "
            f"event it would send (its host facts, logs and failures) as from a clock not set; set it (NTP: "
            f"timedatectl set-ntp true; chronyc makestep), or wait for NTP to set it (a host without a real-time "
            f"clock boots in 1970): systemd starts the agent again every 5 s, so it runs once the clock is right")


def clock_problem(here_s: float, server_s: float, node: str) -> tuple[str, bool] | None:
    """What to say of this host's clock reading `here_s` when the NATS server's reads `server_s` (epoch seconds),
    and whether the agent cannot work so (everything it sends refused); None within SAID_S. Both times are said:
    the server's clock may be the wrong one."""
    skew_s = here_s - server_s
    if abs(skew_s) <= SAID_S:
        return None
    way = (f"{abs(skew_s):,.0f} s {'ahead of' if skew_s > 0 else 'behind'} the NATS server's (this host reads "
           f"{utc(here_s)}, the NATS server {utc(server_s)}")
    if skew_s > MAX_AHEAD.total_seconds():
        return (f"the clock of node {node} is {way}; more than a day ahead): the other services refuse every event "
                f"it would send (its host facts, logs and failures) as from the future; {FIX}, then start the agent",
                True)
    return f"the clock of node {node} is {way}): its runs' times are off by as much; {FIX}", False


async def check_clock(bus: Bus, node: str, wait_s: float = 5.0, now: Callable[[], float] = _now) -> None:
    """ConfigError (one line, exit 2) when this host's clock reads before 2000, or so far ahead of the NATS server's
    that every event is refused; a warning beyond SAID_S. NATS not answering, or no `ts` in its answer: only the
    first is checked."""
    before = now()
    if early := too_early(before, node):  # refused by every service whatever NATS's time: not asked
        raise ConfigError(early)
    try:
        answer = await bus.nc.request(f"$JS.API.STREAM.INFO.{subjects.STREAM}", b"", timeout=wait_s)
    except Exception as exc:  # noqa: BLE001 - the check is a courtesy: NATS's own errors are said elsewhere
        log.debug("the NATS server's time is unknown (%s: %s)", type(exc).__name__, exc)
        return
    server = server_seconds(answer.data)
    if server is None:
        return
    said = clock_problem((before + now()) / 2, server, node)
    if said and said[1]:
        raise ConfigError(said[0])
    if said:
        log.warning("%s", said[0])
