"""NATS loses its JetStream storage under running services (nats-server restarted with an empty store directory: a
pod without a persistent volume rescheduled, an operator wiping it). Its streams, KV buckets and consumers are gone;
the services reconnected (TCP) and then the runner, the parser, the analyzer and the host agent pulled nothing for
ever, silently (NATS answers no pull of a consumer it does not have), and the scheduler placed pods by the scores
of before for ever (its bucket watch followed nothing). Now each stops with one line naming the loss, a non-zero
status (3; the scheduler 1), and, started again, they make the streams again and a new campaign is run, parsed and
stored beside the results of before (the analyzer's DuckDB is untouched)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
from podtax import natsserver
from podtax.bus import Bus

from tests.faults.drill import campaign_spec, submit, wait_header
from tests.integration.harness import node_known

NODE = "wiped-node"
SERVICES = ("runner", "parser", "analyzer", "host_agent", "scheduler")


def _start(name: str, env: dict[str, str], tmp: Path) -> subprocess.Popen[bytes]:
    with open(tmp / f"{name}.log", "ab") as out:
        return subprocess.Popen([sys.executable, "-m", f"podtax_{name}"], env=env, stdout=out,
                                stderr=subprocess.STDOUT)


def _env(nats_url: str, kubeconfig: Path, tmp: Path, api_port: int) -> dict[str, str]:
    """The five services' environment: this NATS, kubesim's kubeconfig, the host agent as node NODE."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats_url,
            "PODTAX_LOG_FORMAT": "text", "PODTAX_HEALTH_PORT": "0", "PODTAX_ANALYZER_DB": str(tmp / "a.duckdb"),
            "PODTAX_ANALYZER_PORT": str(api_port), "PODTAX_AGENT_NODE": NODE, "PODTAX_AGENT_WORKDIR":
            str(tmp / "work"), "PODTAX_RUNNER_KUBERNETES": "false", "PODTAX_SCHEDULER_KUBECONFIG": str(kubeconfig),
            "PODTAX_SCHEDULER_METRICS_PORT": "0", "PODTAX_SCHEDULER_LEADER_ELECT": "false"}


def _wiped(nats: natsserver.NatsServer, tmp: Path) -> natsserver.NatsServer:
    """NATS killed and started again at the same address with its store lost."""
    nats.proc.kill()
    nats.proc.wait()
    shutil.rmtree(tmp / "jetstream")
    return natsserver.start(tmp / "jetstream", nats.port, log_file=tmp / "nats.log")


def _stop(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()
    for proc in procs.values():
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _not_stopped_in_one_line(procs: dict[str, subprocess.Popen[bytes]], tmp: Path) -> list[str]:
    """Each service that did not stop within 30 s with status 3 (the scheduler 1) and one 'NATS lost' line naming the
    empty store, with no traceback: what it said."""
    problems = []
    for name, proc in procs.items():
        try:
            status = proc.wait(30)
        except subprocess.TimeoutExpired:
            status = None
        text = (tmp / f"{name}.log").read_text()
        lost = [line for line in text.splitlines() if "NATS lost" in line]
        if status != (1 if name == "scheduler" else 3) or "Traceback" in text or "never retrieved" in text \
                or len(lost) != 1 or "restarted with an empty store" not in lost[0]:
            problems.append(f"{name}: status {status}, {len(lost)} 'NATS lost' lines:\n{text[-4000:]}")
    return problems


async def _campaign(url: str, name: str, api_port: int) -> list[str]:
    """Run a two-run host campaign through the stack; the campaigns of the runs the analyzer then serves."""
    bus = await Bus.connect(url, "test/store-lost")
    try:
        await node_known(bus, NODE)
        spec = {**campaign_spec(name, [NODE], 2, timeout=10), "environments": ["host"],
                "tests": [{"test": "sysbench-cpu", "params": {"threads": 1, "events": 100}}]}
        await submit(bus, spec)
        h = await wait_header(bus, name, lambda h: h.get("finished_at"), 30, f"campaign {name} to finish")
        assert h["progress"][NODE]["done"] == 2, h
    finally:
        await bus.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            rows = httpx.get(f"http://127.0.0.1:{api_port}/api/runs", params={"limit": 100}, timeout=5).json()
        except httpx.HTTPError:
            rows = []
        if sum(r["campaign"] == name for r in rows) == 2:
            return sorted(r["campaign"] for r in rows)
        await asyncio.sleep(0.2)
    raise AssertionError(f"the analyzer did not store campaign {name}'s 2 runs")


def test_services_stop_in_one_line_when_nats_lost_its_store_and_work_again_once_restarted(tmp_path: Path) -> None:
    from podtax_kubesim import testing

    nats = natsserver.start(tmp_path / "jetstream", log_file=tmp_path / "nats.log")
    sim = testing.start({"nodes": [{"name": "k1", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}]})
    api_port = natsserver.free_port()
    env = _env(nats.url, sim.kubeconfig, tmp_path, api_port)
    procs = {name: _start(name, env, tmp_path) for name in SERVICES}
    try:
        assert asyncio.run(_campaign(nats.url, "before", api_port)) == ["before"] * 2
        scheduler_log = tmp_path / "scheduler.log"
        sim.wait_for(lambda: "started: schedulerName" in scheduler_log.read_text(), timeout=20)

        nats = _wiped(nats, tmp_path)
        problems = _not_stopped_in_one_line(procs, tmp_path)
        assert not problems, "\n".join(problems)

        procs = {name: _start(name, env, tmp_path) for name in SERVICES}  # as their supervisor does
        assert asyncio.run(_campaign(nats.url, "after", api_port)) == ["after"] * 2 + ["before"] * 2
        for name, proc in procs.items():
            assert proc.poll() is None, (tmp_path / f"{name}.log").read_text()
    finally:
        _stop(procs)
        sim.stop()
        nats.stop()
