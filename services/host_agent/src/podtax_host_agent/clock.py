"""This host's clock against the NATS server's, at start. Every event the agent sends carries its host's time, and
the other services refuse one more than a day ahead of theirs (event_payloads.MAX_AHEAD): a host clock 30 h ahead
had its facts dead-lettered by the runner (the CLI then said 'unknown node ... no host agent by that name' while
the agent ran), or, for a node known before, every run's log dead-lettered by the parser and each run failed as
'no result within N s + grace', the reason in the other services' logs only. The server's time is the `ts` of its
answer to a stream info request (nats-server 2.10 and later; an older server's answer has none: not checked)."""

from __future__ import annotations

import json
import logging
import re
import time
from datetime import datetime

from podtax import subjects
from podtax.bus import Bus
from podtax.config import ConfigError
from podtax.event_payloads import MAX_AHEAD

log = logging.getLogger("podtax.host_agent")
SAID_S = 60.0  # a skew beyond this is said (run times of this node against the others' and the runner's)
FIX = "set it right and keep it so (NTP: timedatectl set-ntp true; chronyc makestep)"


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


def clock_problem(skew_s: float, node: str) -> tuple[str, bool] | None:
    """What to say of this host's clock `skew_s` seconds ahead of the server's (behind when negative), and whether
    the agent cannot work so (everything it sends refused); None within SAID_S."""
    if abs(skew_s) <= SAID_S:
        return None
    way = f"{abs(skew_s):,.0f} s {'ahead of' if skew_s > 0 else 'behind'} the NATS server's"
    if skew_s > MAX_AHEAD.total_seconds():
        return (f"the clock of node {node} is {way} (more than a day ahead): the other services refuse every event "
                f"it would send (its host facts, logs and failures) as from the future; {FIX}, then start the agent",
                True)
    return f"the clock of node {node} is {way}: its runs' times are off by as much; {FIX}", False


async def check_clock(bus: Bus, node: str, wait_s: float = 5.0) -> None:
    """ConfigError (one line, exit 2) when this host's clock is so far ahead that every event is refused; a warning
    beyond SAID_S. NATS not answering, or no `ts` in its answer: not checked."""
    before = _now()
    try:
        answer = await bus.nc.request(f"$JS.API.STREAM.INFO.{subjects.STREAM}", b"", timeout=wait_s)
    except Exception as exc:  # noqa: BLE001 - the check is a courtesy: NATS's own errors are said elsewhere
        log.debug("the NATS server's time is unknown (%s: %s)", type(exc).__name__, exc)
        return
    server = server_seconds(answer.data)
    if server is None:
        return
    said = clock_problem((before + _now()) / 2 - server, node)
    if said and said[1]:
        raise ConfigError(said[0])
    if said:
        log.warning("%s", said[0])
