"""NATS loses its JetStream store MID-campaign, host runs going (review hR5 F1): each service still stops with one
'NATS lost ...' line and no traceback. Before, the host agent's handler, publishing its run's log into the lost
stream, logged 'handler failed ...' with nats-py's traceback, and a handler left running as the service stopped
logged 'Task exception was never retrieved' with another."""

from __future__ import annotations

import asyncio
from pathlib import Path

from podtax import natsserver
from podtax.bus import Bus

from tests.faults.drill import campaign_spec, finished_runs, submit, wait_header
from tests.integration.harness import node_known
from tests.integration.test_nats_store_lost import (
    NODE,
    SERVICES,
    _env,
    _not_stopped_in_one_line,
    _start,
    _stop,
    _wiped,
)


async def _campaign_under_way(url: str) -> None:
    """Submit a 60-run host campaign and return once 5 runs are done: the host agent is running the next."""
    bus = await Bus.connect(url, "test/store-lost-midway")
    try:
        await node_known(bus, NODE)
        spec = {**campaign_spec("midway", [NODE], 60, timeout=10), "environments": ["host"],
                "tests": [{"test": "sysbench-cpu", "params": {"threads": 1, "events": 2000}}]}
        await submit(bus, spec)
        await wait_header(bus, "midway", lambda h: finished_runs(h) >= 5, 60, "5 runs")
    finally:
        await bus.close()


def test_services_stop_in_one_line_when_nats_loses_its_store_mid_campaign(tmp_path: Path) -> None:
    from podtax_kubesim import testing

    nats = natsserver.start(tmp_path / "jetstream", log_file=tmp_path / "nats.log")
    sim = testing.start({"nodes": [{"name": "k1", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}]})
    env = _env(nats.url, sim.kubeconfig, tmp_path, natsserver.free_port())
    procs = {name: _start(name, env, tmp_path) for name in SERVICES}
    try:
        asyncio.run(_campaign_under_way(nats.url))
        nats = _wiped(nats, tmp_path)
        problems = _not_stopped_in_one_line(procs, tmp_path)
    finally:
        _stop(procs)
        sim.stop()
        nats.stop()
    assert not problems, "\n".join(problems)
