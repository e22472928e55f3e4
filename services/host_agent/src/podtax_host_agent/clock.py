"""This host's clock against the NATS server's, at start. Every event the agent sends carries its host's time, and
the other services refuse one more than a day ahead of theirs (event_payloads.MAX_AHEAD): a host clock 30 h ahead
had its facts dead-lettered by the runner (the CLI then said 'unknown node ... no host agent by that name' while
the agent ran), or, for a node known before, every run's log dead-lettered by the parser and each run failed as
'no result within N s + grace', the reason in the other services' logs only. The server's time is the `ts` of its
answer to a stream info request (nats-server 2.10 and later; an older server's answer has none: not checked). A
clock before 2000 (a host without a real-time clock boots in 1970 until NTP sets it) has every event refused too
(event_payloads.EARLIEST), whatever the server's time: it only got a warning and ran on, each run failing as 'no
result within N s'; it is checked first, without asking the server.
The other services judge an event by their own clocks, not the server's: with only the NATS server's clock a day behind,
the agent exited 2 though nothing it sent would be refused (every agent down for the server's clock). So over a day
ahead of the server, the agent looks at the newest event in the stream another sender made: its time (its sender's
clock) against the time the server stored it tells the services' clocks from the server's. If this host is within a
day of that sender's, the server's clock is the one off: a warning naming it, and the agent runs. With no such event
(a new stream) nothing tells which clock is wrong: it exits 2 as before, naming both times."""

from __future__ import annotations

import base64
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


def seconds(ts: object) -> float | None:
    """An RFC 3339 time (NATS's, with nanoseconds, or an event's) as epoch seconds, None when it is none."""
    if not isinstance(ts, str):
        return None
    ts = re.sub(r"(\.\d{6})\d+", r"\1", ts).replace("Z", "+00:00")  # nanoseconds: Python takes microseconds
    try:
        return datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return None


def server_seconds(answer: bytes) -> float | None:
    """The server's time in a JetStream API answer (epoch seconds), None when it gives none."""
    try:
        return seconds(json.loads(answer).get("ts"))
    except (ValueError, AttributeError):
        return None


def sent_and_stored(answer: bytes, own: str) -> tuple[float, float, str] | None:
    """From a stream message get answer: when its event was sent (its sender's clock), when the server stored it (the
    server's clock) and who sent it; None for no message, no event, or one sent by `own` (this agent's source)."""
    try:
        message = json.loads(answer)["message"]
        event = json.loads(base64.b64decode(message["data"]))
        sent, stored, source = seconds(event["time"]), seconds(message["time"]), str(event["source"])
    except (ValueError, TypeError, KeyError):
        return None
    return None if sent is None or stored is None or source == own else (sent, stored, source)


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


def clock_problem(here_s: float, server_s: float, node: str,
                  other: tuple[float, float, str] | None = None) -> tuple[str, bool] | None:
    """What to say of this host's clock reading `here_s` when the NATS server's reads `server_s` (epoch seconds),
    and whether the agent cannot work so (everything it sends refused); None within SAID_S. Both times are said:
    the server's clock may be the wrong one. `other`: an event of another sender (sent_and_stored), whose clock
    tells which: this host within a day of it, the server's clock is the one off, and the agent can work."""
    skew_s = here_s - server_s
    if abs(skew_s) <= SAID_S:
        return None
    way = (f"{abs(skew_s):,.0f} s {'ahead of' if skew_s > 0 else 'behind'} the NATS server's (this host reads "
           f"{utc(here_s)}, the NATS server {utc(server_s)}")
    if skew_s > MAX_AHEAD.total_seconds() and other is not None:
        sent, stored, source = other
        if here_s - (server_s + sent - stored) <= MAX_AHEAD.total_seconds():  # the sender's clock: this host's
            return (f"the NATS server's clock is {skew_s:,.0f} s behind node {node}'s and the other services' (this "
                    f"host reads {utc(here_s)}, the NATS server {utc(server_s)}; the last event of {source} was sent "
                    f"at {utc(sent)} by its clock, stored at {utc(stored)} by the server's): the services judge events "
                    f"by their own clocks, so this agent runs; set the NATS server's clock right and keep it so (NTP: "
                    f"timedatectl set-ntp true; chronyc makestep)", False)
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
    here = (before + now()) / 2
    other = await other_sender(bus, node, wait_s) if here - server > MAX_AHEAD.total_seconds() else None
    said = clock_problem(here, server, node, other)
    if said and said[1]:
        raise ConfigError(said[0])
    if said:
        log.warning("%s", said[0])


async def other_sender(bus: Bus, node: str, wait_s: float) -> tuple[float, float, str] | None:
    """The newest event in the stream sent by another than this agent (sent_and_stored): the last of any subject,
    else of the runner's run requests or the CLI's campaigns (the last may be this agent's own host facts)."""
    own = f"podtax/host-agent/{node}"
    for last in (subjects.STREAM_SUBJECTS[0], f"{subjects.RUN_REQUESTED}.>", subjects.CAMPAIGN_SUBMITTED):
        try:
            answer = await bus.nc.request(f"$JS.API.STREAM.MSG.GET.{subjects.STREAM}",
                                          json.dumps({"last_by_subj": last}).encode(), timeout=wait_s)
        except Exception as exc:  # noqa: BLE001 - as the server's time: unknown, the check says what it knows
            log.debug("the stream's last event is unknown (%s: %s)", type(exc).__name__, exc)
            return None
        if found := sent_and_stored(answer.data, own):
            return found
    return None
