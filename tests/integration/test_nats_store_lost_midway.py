"""NATS loses its JetStream store MID-campaign, host runs going (review hR5 F1): each service still stops with one
'NATS lost ...' line and no traceback. Before, the host agent's handler, publishing its run's log into the lost
stream, logged 'handler failed ...' with nats-py's traceback, and a handler left running as the service stopped
logged 'Task exception was never retrieved' with another."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

from podtax import natsserver
from podtax.bus import Bus

from tests.faults.drill import campaign_spec, finished_runs, submit, wait_header
from tests.integration.harness import node_known
from tests.integration.test_nats_store_lost import NODE, SERVICES, _start


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
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats.url,
           "PODTAX_LOG_FORMAT": "text", "PODTAX_HEALTH_PORT": "0", "PODTAX_ANALYZER_DB": str(tmp_path / "a.duckdb"),
           "PODTAX_ANALYZER_PORT": str(natsserver.free_port()), "PODTAX_AGENT_NODE": NODE, "PODTAX_AGENT_WORKDIR":
           str(tmp_path / "work"), "PODTAX_RUNNER_KUBERNETES": "false", "PODTAX_SCHEDULER_KUBECONFIG":
           str(sim.kubeconfig), "PODTAX_SCHEDULER_METRICS_PORT": "0", "PODTAX_SCHEDULER_LEADER_ELECT": "false"}
    procs = {name: _start(name, env, tmp_path) for name in SERVICES}
    problems = []
    try:
        asyncio.run(_campaign_under_way(nats.url))
        nats.proc.kill()
        nats.proc.wait()
        shutil.rmtree(tmp_path / "jetstream")  # the store lost; the same address
        nats = natsserver.start(tmp_path / "jetstream", nats.port, log_file=tmp_path / "nats.log")
        for name, proc in procs.items():
            try:
                status = proc.wait(30)
            except subprocess.TimeoutExpired:
                status = None
            text = (tmp_path / f"{name}.log").read_text()
            lost = [line for line in text.splitlines() if "NATS lost" in line]
            if status != (1 if name == "scheduler" else 3) or "Traceback" in text or "never retrieved" in text \
                    or len(lost) != 1:
                problems.append(f"{name}: status {status}, {len(lost)} 'NATS lost' lines:\n{text[-4000:]}")
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        sim.stop()
        nats.stop()
    assert not problems, "\n".join(problems)
