"""A big campaign's save meets NATS away: the runner keeps running, and plans and saves the campaign once NATS is
back (real nats-server killed with SIGKILL and started again on its port and store, the real runner).

Found by review r11 (session 51): 10 nodes x 2,000 repetitions (20,000 runs, ~40 MB of KV puts), nats-server killed
as the runner planned it. nats-py's outbound buffer (2 MB) filled while disconnected: the save raised
OutboundBufferLimitError, the handler's nak raised it again, and the runner exited 1 with a traceback."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from nats.aio.msg import Msg
from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.faults.drill import campaign_spec, header, seed_nodes, submit
from tests.integration.harness import wait_for
from tests.paused import kill_nats, start_nats_again

NODES = [f"n{i}" for i in range(10)]
REPS = 2000


async def _nodes_read(bus: Bus) -> asyncio.Event:
    """Set once the runner asked NATS for the last node's facts (the campaign's nodes, read before it is planned):
    a plain subscriber gets a copy of each get request, so the test sees that moment."""
    read = asyncio.Event()
    last = subjects.node_key(NODES[-1])

    async def seen(msg: Msg) -> None:
        if msg.subject.endswith(last) or last.encode() in msg.data:
            read.set()

    for api in ("$JS.API.DIRECT.GET.>", "$JS.API.STREAM.MSG.GET.>"):
        await bus.nc.subscribe(api, cb=seen)
    return read


async def test_runner_keeps_a_campaign_whose_save_met_nats_away(tmp_path: Path) -> None:
    server = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    log = tmp_path / "runner.log"
    proc: subprocess.Popen[bytes] | None = None
    try:
        bus = await Bus.connect(server.url, "test")
        await bus.ensure_streams()
        await seed_nodes(bus, NODES)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": server.url,
               "PODTAX_HEALTH_PORT": "0", "PODTAX_LOG_FORMAT": "text", "PODTAX_RUNNER_KUBERNETES": "false"}
        with log.open("wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "podtax_runner"], env=env, stdout=out,
                                    stderr=subprocess.STDOUT)
        await wait_for(lambda: "started" in log.read_text() or proc.poll() is not None, 60, "the runner to start")
        read = await _nodes_read(bus)
        await submit(bus, {**campaign_spec("big", NODES, REPS), "environments": ["host"]})
        await asyncio.wait_for(read.wait(), 60)
        await asyncio.sleep(0.1)  # its answer is in too: killed as the runner plans the campaign, before its save
        await bus.close()
        kill_nats(server)
        await wait_for(lambda: "handler failed for" in log.read_text() or proc.poll() is not None, 120,
                       "the save to fail")
        assert proc.poll() is None, log.read_text()[-3000:]
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]

        start_nats_again(server, tmp_path / "nats2.log")
        await wait_for(lambda: f"campaign big planned: {len(NODES) * REPS} runs" in log.read_text()
                       or proc.poll() is not None, 180, "the campaign to be planned once NATS is back")
        assert proc.poll() is None, log.read_text()[-3000:]
        bus = await Bus.connect(server.url, "test")
        saved = await header(bus, "big")
        await bus.close()
        assert saved is not None and saved["name"] == "big", saved

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-3000:]
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        server.stop()
