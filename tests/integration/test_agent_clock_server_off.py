"""Fault scenario 'the NATS server's clock a day behind' (every other clock right). The other services judge an
event's time by their own clocks, so nothing the agent sends is refused; but the agent compared its clock with the
server's only, and exited 2 ('the clock of node n1 is 108,000 s ahead of the NATS server's ...'): a server's clock
set wrong stopped every host agent. Now, over a day ahead of the server, the agent reads the newest event another
sender put in the stream: its sender's time against the server's stored time shows whose clock agrees with this
host's. Real nats-server and agent process; as in test_agent_clock_ahead, the agent's clock is shifted in its process
and the other sender's event carries the shifted time too: to the agent, a server a day behind everyone else."""

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
from podtax_host_agent.clock import sent_and_stored

from tests.integration.test_agent_clock_ahead import NODE, _agent, _facts_sent

HOURS = 30.0


async def _campaign_event(nats_url: str, shift_h: float) -> None:
    """A campaign.submitted as the CLI sends it, sent `shift_h` hours ahead of the server's clock (the agent reads only
    its envelope's time and source; no runner runs to take it)."""
    bus = await Bus.connect(nats_url, "test/clock")
    try:
        await bus.ensure_streams()
        sent = (datetime.now(UTC) + timedelta(hours=shift_h)).isoformat().replace("+00:00", "Z")
        await bus.js.publish(subjects.CAMPAIGN_SUBMITTED, json.dumps(
            {"id": "c1", "type": "podtax.campaign.submitted.v1", "source": "podtax/cli", "time": sent,
             "subject": subjects.CAMPAIGN_SUBMITTED, "data": {}}).encode())
    finally:
        await bus.close()


@pytest.mark.parametrize(("sender_h", "runs"), [
    (HOURS, True),  # the CLI's clock agrees with this host's: the server's is the one off, the agent runs
    (0.0, False),  # the CLI's agrees with the server's: this host's is off, everything it sends would be refused
], ids=["server-off", "host-off"])
async def test_the_agent_tells_the_servers_clock_off_from_its_own(nats_url: str, tmp_path: Path, sender_h: float,
                                                                  runs: bool) -> None:
    await _campaign_event(nats_url, sender_h)
    proc = _agent(nats_url, tmp_path, HOURS)
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline and not await _facts_sent(nats_url):
            await asyncio.sleep(0.2)
        sent = await _facts_sent(nats_url)
    finally:
        if proc.poll() is None:
            proc.terminate()
        err = proc.communicate(timeout=30)[1]
    assert "Traceback" not in err, err
    if runs:
        assert sent == 1, err  # its host facts, which the services take
        [line] = [x for x in err.splitlines() if "the NATS server's clock is 10" in x]
        assert f"s behind node {NODE}'s and the other services' (this host reads " in line, line
        assert "the last event of podtax/cli was sent at" in line and "so this agent runs" in line, line
        assert "timedatectl set-ntp true" in line, line
    else:
        assert proc.returncode == 2 and sent == 0, err
        [line] = [x for x in err.splitlines() if f"the clock of node {NODE} is 10" in x]
        assert "more than a day ahead" in line, line


def _got(source: str) -> bytes:
    event = json.dumps({"source": source, "time": "2026-12-07T17:20:55Z"}).encode()
    return json.dumps({"message": {"data": base64.b64encode(event).decode(),
                                   "time": "2026-12-06T17:20:55.234411938Z"}}).encode()


@pytest.mark.parametrize(("answer", "found"), [
    (_got("podtax/cli"), (1796663655.0, 1796577655.234411, "podtax/cli")),
    (_got(f"podtax/host-agent/{NODE}"), None),  # this agent's own facts: its own clock, no evidence
    (b'{"error": {"code": 404, "description": "no message found"}}', None),  # a new stream
    (json.dumps({"message": {"data": "bm90IGpzb24=", "time": "2026-12-06T17:20:55Z"}}).encode(), None),
])
def test_the_other_senders_event_is_read_from_the_stream_answer(answer: bytes, found: tuple | None) -> None:
    got = sent_and_stored(answer, f"podtax/host-agent/{NODE}")
    assert got == (pytest.approx(found[0]), pytest.approx(found[1]), found[2]) if found else got is None
