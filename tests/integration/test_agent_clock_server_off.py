"""Fault scenario 'the NATS server's clock a day behind' (every other clock right). The other services judge an
event's time by their own clocks, so nothing the agent sends is refused; but the agent compared its clock with the
server's only, and exited 2 ('the clock of node n1 is 108,000 s ahead of the NATS server's ...'): a server's clock
set wrong stopped every host agent. Now, over a day ahead of the server, the agent reads the last events the services
that judge its events (runner, parser, analyzer) put in the stream within the last day: each one's time against the
server's stored time shows whose clock agrees with this host's. A host whose own clock is wrong still stops, whatever
else is in the stream: another host agent's or the CLI's event sent by an equally wrong clock, a runner's sent far
ahead of this host's. Real nats-server and agent process; as in test_agent_clock_ahead, the agent's clock is shifted
in its process and the other senders' events carry the shifted times too."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from podtax import subjects
from podtax.bus import Bus
from podtax_host_agent.clock import RECENT_S, clock_problem, sent_and_stored

from tests.integration.test_agent_clock_ahead import NODE, _agent, _facts_sent

HOURS = 30.0
H = 3600.0
RUNNER = (f"{subjects.RUN_REQUESTED}.k8s.{NODE}", "podtax/runner")  # a run request, as the runner sends it
CLI = (subjects.CAMPAIGN_SUBMITTED, "podtax/cli")
AGENT_N2 = (f"{subjects.HOST_FACTS}.k8s.n2", "podtax/host-agent/n2")


async def _events(nats_url: str, sent: list[tuple[tuple[str, str], float]]) -> None:
    """Events as their senders send them, in order, each `shift_h` hours ahead of the server's clock (the agent reads
    only their envelopes' time and source; no service runs to take them)."""
    bus = await Bus.connect(nats_url, "test/clock")
    try:
        await bus.ensure_streams()
        for i, ((subject, source), shift_h) in enumerate(sent):
            at = (datetime.now(UTC) + timedelta(hours=shift_h)).isoformat().replace("+00:00", "Z")
            await bus.js.publish(subject, json.dumps({"id": f"e{i}", "type": "podtax.test.v1", "source": source,
                                                      "time": at, "subject": subject, "data": {}}).encode())
    finally:
        await bus.close()


@pytest.mark.parametrize(("sent", "runs"), [
    ([(RUNNER, HOURS)], True),  # the runner's clock agrees with this host's: the server's is the one off
    ([(RUNNER, 0.0)], False),  # the runner's agrees with the server's: this host's is off, its events refused
    # this host's clock off, and the runner's right; the newest event sent by another host as wrong as this one:
    ([(RUNNER, 0.0), (AGENT_N2, HOURS)], False),  # another host agent's (ran at HEAD e5ae4a1)
    ([(RUNNER, 0.0), (CLI, HOURS)], False),  # the CLI's, run on such a host (ran at HEAD)
    ([(RUNNER, 24 * 3650.0)], False),  # a runner 10 years ahead: nowhere near this host (ran at HEAD: one-sided)
    ([(RUNNER, 2 * HOURS)], False),  # a runner 60 h ahead, this host 30 h: 30 h apart (ran at HEAD)
], ids=["server-off", "host-off", "another-agent-as-wrong", "cli-as-wrong", "runner-10y-ahead", "runner-60h-ahead"])
async def test_the_agent_tells_the_servers_clock_off_from_its_own(nats_url: str, tmp_path: Path,
                                                                  sent: list[tuple[tuple[str, str], float]],
                                                                  runs: bool) -> None:
    await _events(nats_url, sent)
    before = await _facts_sent(nats_url)  # another agent's, sent above
    proc = _agent(nats_url, tmp_path, HOURS)
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline and await _facts_sent(nats_url) == before:
            await asyncio.sleep(0.2)
        facts = await _facts_sent(nats_url) - before
    finally:
        if proc.poll() is None:
            proc.terminate()
        err = proc.communicate(timeout=30)[1]
    assert "Traceback" not in err, err
    if runs:
        assert facts == 1, err  # its host facts, which the services take
        [line] = [x for x in err.splitlines() if "the NATS server's clock is 10" in x]
        assert f"s behind node {NODE}'s and podtax/runner's (this host reads " in line, line
        assert "the last event of podtax/runner was sent at" in line, line
        assert "podtax/runner judges this agent's events by its own clock, so it runs" in line, line
        assert "no event of the last day tells podtax/parser's or podtax/analyzer's clock)" in line, line
        assert "timedatectl set-ntp true" in line, line
    else:
        assert proc.returncode == 2 and facts == 0, err
        [line] = [x for x in err.splitlines() if f"the clock of node {NODE} is 10" in x]
        assert "more than a day ahead" in line, line


SERVER_S = 1796577655.0  # 2026-12-06 17:20:55 UTC


@pytest.mark.parametrize(("sent", "stops"), [
    ([(SERVER_S + 30 * H, SERVER_S - 60, "podtax/runner")], False),  # the server-off case, as numbers
    ([(SERVER_S + 30 * H - 2 * RECENT_S, SERVER_S - 2 * RECENT_S, "podtax/runner")], True),  # stored 2 days ago
    ([(SERVER_S + 30 * H, SERVER_S + 2 * H, "podtax/runner")], True),  # stored 'later': the server's clock set back
    ([(SERVER_S + 30 * H, SERVER_S, "podtax/runner/simulated")], True),  # no judge of a real agent's events
    ([(SERVER_S + 30 * H, SERVER_S, "podtax/runner"), (SERVER_S, SERVER_S, "podtax/parser")], True),  # parser refuses
    ([(SERVER_S + 30 * H, SERVER_S, "podtax/runner"), (SERVER_S + 29 * H, SERVER_S, "podtax/parser")], False),
    ([(SERVER_S + 7 * H, SERVER_S, "podtax/analyzer")], False),  # 23 h behind this host: within a day, either way
    ([(SERVER_S + 5 * H, SERVER_S, "podtax/analyzer")], True),  # 25 h behind
])
def test_only_recent_events_of_the_services_that_judge_its_events_tell_the_servers_clock_off(
        sent: list[tuple[float, float, str]], stops: bool) -> None:
    line, stop = clock_problem(SERVER_S + 30 * H, SERVER_S, NODE, sent) or ("", None)
    assert stop is stops, line
    assert ("more than a day ahead" in line) is stops, line


def _got(source: str) -> bytes:
    event = json.dumps({"source": source, "time": "2026-12-07T17:20:55Z"}).encode()
    return json.dumps({"message": {"data": base64.b64encode(event).decode(),
                                   "time": "2026-12-06T17:20:55.234411938Z"}}).encode()


@pytest.mark.parametrize(("answer", "found"), [
    (_got("podtax/runner"), (1796663655.0, 1796577655.234411, "podtax/runner")),
    (_got(f"podtax/host-agent/{NODE}"), (1796663655.0, 1796577655.234411, f"podtax/host-agent/{NODE}")),
    (b'{"error": {"code": 404, "description": "no message found"}}', None),  # a new stream
    (json.dumps({"message": {"data": "bm90IGpzb24=", "time": "2026-12-06T17:20:55Z"}}).encode(), None),
])
def test_the_senders_event_is_read_from_the_stream_answer(answer: bytes, found: tuple | None) -> None:
    got = sent_and_stored(answer)
    assert got == (pytest.approx(found[0]), pytest.approx(found[1]), found[2]) if found else got is None
