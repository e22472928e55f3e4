"""A full events stream (its size limit, PODTAX_NATS_STREAM_MAX_BYTES, reached: JetStream refuses new events) was
never named: nats-py drops JetStream's refusal of a pipelined publish (its reply handler raises instead of failing
the ack), so Bus.publish_many waited out its 30 s and said 'the server restarted or is overloaded?', and `podtax
import` said 'NATS did not answer within 30 s ... (is the server down?)' (audit). Now the refusal ends the wait
with what it is and what to do; the analyzer and parser hold their batch with that reason. A single publish
(`podtax campaign submit`, `cancel`) into a full stream gave nats-py's traceback; it raises Unacked, saying so."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from podtax import events
from podtax.bus import Bus, Unacked

LOG = Path(__file__).parents[1] / "corpus" / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log"
PARAMS = "threads=1 max_prime=100000 events=200 time=0"


async def test_a_publish_into_a_full_stream_says_it_is_full(nats_url: str) -> None:
    bus = await Bus.connect(nats_url, "test")
    try:
        await bus.ensure_streams(max_bytes=2_000)
        cancel = events.campaign_cancelled(events.CampaignCancelled(campaign="full", reason="x" * 3_000), "test")
        with pytest.raises(Unacked, match=r"^JetStream refused the events: its stream is full \(maximum bytes "):
            await bus.publish(cancel)
    finally:
        await bus.close()


async def test_a_calls_start_keeps_the_refusal_another_call_has_yet_to_see(nats_url: str) -> None:
    """publish_many kept one refusal flag per connection and cleared it at each call's start: a call starting
    (the runner's unreported and simulated results are separate tasks) right after a refusal reached the connection,
    before the call it was for looked, erased it. Each call has its own now."""
    from nats.js.errors import APIError
    from podtax.bus import FULL

    bus = await Bus.connect(nats_url, "test")
    try:
        await bus.ensure_streams(max_bytes=1_000_000)
        cancel = events.campaign_cancelled(events.CampaignCancelled(campaign="c", reason="x"), "test")
        first = asyncio.create_task(bus.publish_many([cancel]))
        await asyncio.sleep(0)  # it publishes and waits for its ack
        # the refusal as nats-py hands it over (the error callback: it drops the ack), then another call at once
        await bus.nc._error_cb(APIError(code=400, err_code=FULL, description="maximum bytes exceeded"))
        assert await bus.publish_many([]) == 0
        with pytest.raises(Unacked, match=r"^JetStream refused the events: its stream is full"):
            await first
    finally:
        await bus.close()


def test_import_into_a_full_stream_says_it_is_full(nats_url: str, tmp_path: Path) -> None:
    async def small_streams() -> None:
        bus = await Bus.connect(nats_url, "test")
        await bus.ensure_streams(max_bytes=20_000)  # about 20 of these logs
        await bus.close()

    asyncio.run(small_streams())
    rows = ["file,node,env,test,params,started_at,tool_version"]
    for i in range(60):
        (tmp_path / f"r{i}.log").write_text(LOG.read_text())
        rows.append(f"r{i}.log,node-1,{('host', 'kubernetes')[i % 2]},sysbench-cpu,{PARAMS},"
                    f"2024-03-01T10:{i:02d}:00Z,")
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats_url}
    done = subprocess.run([sys.executable, "-m", "podtax.cli.main", "import", str(tmp_path / "m.csv"), "--campaign",
                           "full"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith("error: JetStream refused the events: its stream is full (maximum bytes exceeded); raise "
                           "its size limit as a NATS admin (`nats stream edit PODTAX --max-bytes`; "
                           "PODTAX_NATS_STREAM_MAX_BYTES"), line
    assert "under `podtax up`, see the README" in line, line
    assert "stopped part-way: 0 of 60 published" in line and "did not answer" not in line
    assert "Traceback" not in done.stderr and "never retrieved" not in done.stderr, done.stderr
