"""Fault scenario 'clock skew between nodes': a host whose clock is 30 h ahead of the NATS server's. Every event its
agent sent was refused by the other services as from the future (dead-lettered): its host facts, so the CLI said
'unknown node ... no host agent by that name' while the agent ran, and for a node known before, each run's log, so
each run failed as 'no result within N s + grace', the reason in the parser's and runner's logs only. Now the agent
compares its clock with the server's at start: over a day ahead it exits 2 with one line naming the skew and the
fix, before it sends anything; a smaller skew is a warning. Real nats-server and agent process; its clock is
shifted inside the process (time.time and podtax's now, a stand-in for a host clock set wrong)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from podtax import subjects
from podtax.bus import Bus
from podtax.config import ConfigError
from podtax.event_payloads import EARLIEST
from podtax_host_agent.clock import SAID_S, check_clock, clock_problem, server_seconds, too_early

NODE = "n1"
SHIFTED = """
import runpy, sys, time
from datetime import timedelta
import podtax.event_payloads as ep
ep._SHIFT = timedelta(hours=float(sys.argv[1]))
def _now():
    return datetime.now(UTC) + _SHIFT
ep.now.__code__ = _now.__code__  # the envelope's default_factory too
_time = time.time
time.time = lambda: _time() + ep._SHIFT.total_seconds()
sys.argv = sys.argv[:1]
runpy.run_module("podtax_host_agent", run_name="__main__")
"""


def _agent(nats_url: str, tmp: Path, hours: float) -> subprocess.Popen[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats_url,
           "PODTAX_AGENT_NODE": NODE, "PODTAX_HEALTH_PORT": "0", "PODTAX_LOG_FORMAT": "text",
           "PODTAX_AGENT_WORKDIR": str(tmp / "work"), "PODTAX_AGENT_STATE_DIR": str(tmp / "state")}
    return subprocess.Popen([sys.executable, "-c", SHIFTED, str(hours)], env=env, stderr=subprocess.PIPE, text=True)


async def _facts_sent(nats_url: str) -> int:
    bus = await Bus.connect(nats_url, "test/clock")
    try:
        await bus.ensure_streams()
        info = await bus.js.stream_info(subjects.STREAM, subjects_filter=f"{subjects.HOST_FACTS}.>")
        return sum((info.state.subjects or {}).values())
    finally:
        await bus.close()


@pytest.mark.parametrize(("hours", "said"), [
    (30, "is 10"),  # 108,000 s ahead, or 107,99x s: the server's time is read a moment later
    # a Raspberry Pi without a real-time clock, booted before NTP set it: 1970-01-01 00:01. Its events are refused
    # as before 2000 (event_payloads.EARLIEST): it ran on with a warning, its runs failing as 'no result'
    (None, "reads 1970-01-01 00:0"),  # the shift to 00:01 is taken when the test runs, not when it is collected
], ids=["a-day-ahead", "in-1970"])
async def test_an_agent_whose_clock_would_have_its_events_refused_stops_in_one_line_before_sending(
        nats_url: str, tmp_path: Path, hours: float | None, said: str) -> None:
    if hours is None:  # taken at collection, the shift put the clock at 00:31 after half an hour of other tests
        hours = -(time.time() - 60) / 3600
    assert await _facts_sent(nats_url) == 0  # the streams made, as the runner would
    proc = _agent(nats_url, tmp_path, hours)
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert proc.poll() is not None, f"the agent ran on with its clock {hours:,.0f} h off"
    finally:
        if proc.poll() is None:
            proc.kill()
        err = proc.communicate(timeout=30)[1]
    assert proc.returncode == 2, err
    assert "Traceback" not in err, err
    [line] = [x for x in err.splitlines() if f"the clock of node {NODE} " in x]
    assert f"the clock of node {NODE} {said}" in line, line
    if hours > 0:  # the times this host and the server read, for the operator to tell which clock is wrong
        assert re.search(r"\(this host reads \S+ \S+ UTC, the NATS server \S+ \S+ UTC; more than a day ahead\)",
                         line), line
    assert "timedatectl set-ntp true" in line, line
    assert await _facts_sent(nats_url) == 0  # nothing sent that would be dead-lettered


SERVER_S = 1796577655.0  # 2026-12-06 17:20:55 UTC


@pytest.mark.parametrize(("skew", "said", "fatal"), [
    (0.0, None, False), (SAID_S, None, False), (-SAID_S, None, False),
    (300.0, "300 s ahead of the NATS server's (this host reads 2026-12-06 17:25:55 UTC, the NATS server 2026-12-06 "
            "17:20:55 UTC): its runs' times are off by as much", False),
    (-7200.0, "7,200 s behind the NATS server's (this host reads 2026-12-06 15:20:55 UTC, the NATS server", False),
    # both times said: the operator tells which clock is wrong (the server's, set a day back, blamed this node)
    (25 * 3600.0, "(this host reads 2026-12-07 18:20:55 UTC, the NATS server 2026-12-06 17:20:55 UTC; more than a "
                  "day ahead)", True),
])
def test_what_is_said_of_a_skew(skew: float, said: str | None, fatal: bool) -> None:
    got = clock_problem(SERVER_S + skew, SERVER_S, NODE)
    assert (got is None) == (said is None), got
    if got:
        assert said in got[0] and got[1] is fatal, got


@pytest.mark.parametrize(("answer", "seconds"), [
    (b'{"ts": "2026-12-06T17:20:55.234411938Z", "config": {}}', 1796577655.234411),
    (b'{"ts": "2026-12-06T17:20:55Z"}', 1796577655.0),
    (b'{"config": {}}', None),  # a server older than 2.10
    (b"not json", None),
    (b'{"ts": 5}', None),
])
def test_the_servers_time_is_read_from_its_answer(answer: bytes, seconds: float | None) -> None:
    got = server_seconds(answer)
    assert got == pytest.approx(seconds) if seconds is not None else got is None


class _NoBus:
    """A bus that fails the test when asked: a clock before 2000 is refused before the NATS server is asked."""

    @property
    def nc(self) -> object:
        raise AssertionError("the NATS server was asked")


@pytest.mark.parametrize(("now_s", "said"), [
    (60.0, "reads 1970-01-01 00:01:00 UTC, before 2000"),
    (EARLIEST.timestamp() - 1, "reads 1999-12-31 23:59:59 UTC, before 2000"),
])
async def test_a_clock_before_2000_stops_the_agent_without_asking_nats(now_s: float, said: str) -> None:
    with pytest.raises(ConfigError, match="timedatectl set-ntp true") as got:
        await check_clock(_NoBus(), NODE, now=lambda: now_s)  # type: ignore[arg-type]
    assert f"the clock of node {NODE} {said}" in str(got.value), got.value
    assert too_early(EARLIEST.timestamp(), NODE) is None
