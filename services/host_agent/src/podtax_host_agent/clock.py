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
ahead of the server, the agent looks at the last events the services that judge its events sent (JUDGES: the runner
takes its host facts and failures, the parser its logs, the analyzer stores them all), stored within the last day
(RECENT_S): an event's time (its sender's clock) against the time the server stored it gives that sender's clock now,
as long as the server's offset has not changed since, which a day makes likely (a clock not set by NTP drifts seconds
a day; only a clock set by hand in that day misleads). Every one within a day of this host's, either way: the server's
clock is the one off and those services take what the agent sends: a warning naming them, and the agent runs. Any
other sender (the CLI, another host agent: their hosts' clocks may be as wrong as this one's), none recent (a new
stream), or one of them more than a day off: nothing tells this host's clock right, it exits 2 as before."""

from __future__ import annotations

import base64
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from podtax import subjects
from podtax.bus import Bus
from podtax.config import ConfigError
from podtax.event_payloads import EARLIEST, MAX_AHEAD

log = logging.getLogger("podtax.host_agent")
SAID_S = 60.0  # a skew beyond this is said (run times of this node against the others' and the runner's)
JUDGES = ("podtax/runner", "podtax/parser", "podtax/analyzer")  # the services that take or refuse the agent's events
SENT_BY_JUDGES = (subjects.RUN_REQUESTED, subjects.RUN_RESULT, subjects.RUN_FAILED, subjects.CELL_STATS,
                  subjects.SCORE_UPDATED)  # where they send: the last of each is read (run.failed: its source told)
RECENT_S = MAX_AHEAD.total_seconds()  # evidence stored longer ago (by the server's clock) tells nothing of it now
Sent = tuple[float, float, str]  # an event's sent time (its sender's clock), stored time (the server's), sender
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


def sent_and_stored(answer: bytes) -> Sent | None:
    """From a stream message get answer: when its event was sent (its sender's clock), when the server stored it (the
    server's clock) and who sent it; None for no message or no event."""
    try:
        message = json.loads(answer)["message"]
        event = json.loads(base64.b64decode(message["data"]))
        sent, stored, source = seconds(event["time"]), seconds(message["time"]), str(event["source"])
    except (ValueError, TypeError, KeyError):
        return None
    return None if sent is None or stored is None else (sent, stored, source)


def judges_agree(here_s: float, server_s: float, sent: Sequence[Sent]) -> list[Sent]:
    """The events of `sent` by JUDGES stored within RECENT_S (by the server's clock, `server_s`), newest first, when
    each sender's clock now (server_s + its sent - stored) is within MAX_AHEAD of this host's (`here_s`), either way;
    [] when none is, or any of them is off by more (that service would refuse this agent's events)."""
    recent = sorted((s for s in sent if s[2] in JUDGES and -SAID_S <= server_s - s[1] <= RECENT_S),
                    key=lambda s: s[1], reverse=True)
    agree = all(abs(here_s - (server_s + s[0] - s[1])) <= MAX_AHEAD.total_seconds() for s in recent)
    return recent if agree else []


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


def _and(words: Sequence[str], conj: str = "and") -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conj} {words[-1]}"


def clock_problem(here_s: float, server_s: float, node: str,
                  sent: Sequence[Sent] = ()) -> tuple[str, bool] | None:
    """What to say of this host's clock reading `here_s` when the NATS server's reads `server_s` (epoch seconds),
    and whether the agent cannot work so (everything it sends refused); None within SAID_S. Both times are said:
    the server's clock may be the wrong one. `sent`: the last events in the stream (sent_and_stored); when the
    services that judge this agent's events agree with this host (judges_agree), the server's clock is the one off."""
    skew_s = here_s - server_s
    if abs(skew_s) <= SAID_S:
        return None
    way = (f"{abs(skew_s):,.0f} s {'ahead of' if skew_s > 0 else 'behind'} the NATS server's (this host reads "
           f"{utc(here_s)}, the NATS server {utc(server_s)}")
    if skew_s > MAX_AHEAD.total_seconds() and (agree := judges_agree(here_s, server_s, sent)):
        names = [j for j in JUDGES if any(s[2] == j for s in agree)]
        unseen = [f"{j}'s" for j in JUDGES if j not in names]
        at, stored, last = agree[0]
        its = "its own clock" if len(names) == 1 else "their own clocks"
        theirs = _and([f"{n}'s" for n in names])
        return (f"the NATS server's clock is {skew_s:,.0f} s behind node {node}'s and {theirs}"
                f" (this host reads {utc(here_s)}, the NATS server {utc(server_s)}; the last event of {last} was sent "
                f"at {utc(at)} by its clock, stored at {utc(stored)} by the server's"
                + (f"; no event of the last day tells {_and(unseen, 'or')} clock" if unseen else "")
                + f"): {_and(names)} {'judges' if len(names) == 1 else 'judge'} this agent's events by {its}, so it "
                f"runs; set the NATS server's clock right and keep it so (NTP: timedatectl set-ntp true; chronyc "
                f"makestep)", False)
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
    sent = await last_sent(bus, wait_s) if here - server > MAX_AHEAD.total_seconds() else []
    said = clock_problem(here, server, node, sent)
    if said and said[1]:
        raise ConfigError(said[0])
    if said:
        log.warning("%s", said[0])


async def last_sent(bus: Bus, wait_s: float) -> list[Sent]:
    """The last event in the stream of each subject the JUDGES send (sent_and_stored); a question unanswered ends
    the list (what is known is judged, as the server's time: a courtesy)."""
    found: list[Sent] = []
    for family in SENT_BY_JUDGES:
        try:
            answer = await bus.nc.request(f"$JS.API.STREAM.MSG.GET.{subjects.STREAM}",
                                          json.dumps({"last_by_subj": f"{family}.>"}).encode(), timeout=wait_s)
        except Exception as exc:  # noqa: BLE001 - as the server's time: unknown, the check says what it knows
            log.debug("the stream's last event is unknown (%s: %s)", type(exc).__name__, exc)
            break
        if got := sent_and_stored(answer.data):
            found.append(got)
    return found
