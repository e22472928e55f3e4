"""Fault scenario "SIGKILL each service": a real host campaign (sysbench, small parameters) through the
whole stack as child processes (nats-server, runner, host agent, parser, analyzer); each of them is
SIGKILLed in turn mid-campaign and started again (nats-server on its port and store).

Expected: every planned run ends as exactly one result or one recorded failure (in the stream and in
DuckDB, read through the analyzer's API); none twice, none lost.

For the `make faults` suite: ``run() -> dict(planned, results, failures, duplicates, lost)``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from podtax import natsserver
from podtax.bus import Bus

from tests.faults.drill import campaign_spec, finished_runs, header, seed_nodes, submit, tally, wait_header

NODE = "fault-node"
ORDER = ("runner", "host_agent", "parser", "analyzer", "nats-server")  # killed in this order


class Stack:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.api_port = natsserver.free_port()
        self.nats = natsserver.start(tmp / "jetstream", log_file=tmp / "nats.log")
        self.env = {**os.environ, "PODTAX_NATS_URL": self.nats.url, "PODTAX_LOG_FORMAT": "text",
                    "PODTAX_ANALYZER_DB": str(tmp / "podtax.duckdb"), "PODTAX_ANALYZER_PORT": str(self.api_port),
                    "PODTAX_AGENT_NODE": NODE, "PODTAX_AGENT_WORKDIR": str(tmp / "work"),
                    "PODTAX_AGENT_ACK_WAIT_S": "5", "PODTAX_RUNNER_KUBERNETES": "false",
                    "PODTAX_RUNNER_REPORT_GRACE_S": "20"}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        if name == "nats-server":
            self.nats = natsserver.start(self.tmp / "jetstream", self.nats.port, log_file=self.tmp / "nats.log")
            return
        with open(self.tmp / f"{name}.log", "ab") as out:
            self.procs[name] = subprocess.Popen([sys.executable, "-m", f"podtax_{name}"], env=self.env, stdout=out,
                                                stderr=subprocess.STDOUT)

    def kill(self, name: str) -> None:
        proc = self.nats.proc if name == "nats-server" else self.procs[name]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.nats.stop()

    def stored(self, campaign: str) -> tuple[int, int] | None:
        """(rows, distinct run ids) the analyzer stored for the campaign."""
        try:
            rows = httpx.get(f"http://127.0.0.1:{self.api_port}/api/runs",
                             params={"campaign": campaign, "limit": 100_000}, timeout=5).json()
        except (httpx.HTTPError, ValueError):
            return None
        return len(rows), len({r["run_id"] for r in rows})


async def scenario(tmp: Path, reps: int = 40) -> dict[str, Any]:
    stack = Stack(tmp)
    name = "sigkill"
    killed: dict[str, int] = {}
    try:
        for svc in ("analyzer", "parser", "host_agent", "runner"):
            stack.start(svc)
        bus = await Bus.connect(stack.nats.url, "faults/sigkill")
        await bus.ensure_streams()
        await seed_nodes(bus, [NODE])
        spec = {**campaign_spec(name, [NODE], reps, combos=2, timeout=10), "environments": ["host"],
                "tests": [{"test": "sysbench-cpu", "params": {"threads": 1, "events": 100},
                           "matrix": {"max_prime": [2000, 3000]}}]}
        await submit(bus, spec)
        h = await wait_header(bus, name, lambda h: True, 60, "the campaign to be planned")
        total = h["runs"]
        for i, svc in enumerate(ORDER):
            share = (i + 1) / (len(ORDER) + 2)
            await wait_header(bus, name, lambda h, s=share: finished_runs(h) >= s * total, 300, f"{share:.0%}")
            killed[svc] = finished_runs(await header(bus, name))
            stack.kill(svc)
            await asyncio.sleep(0.5)
            stack.start(svc)
        await wait_header(bus, name, lambda h: h.get("finished_at"), 300, "the campaign to finish")
        await bus.close()
        out = await tally(stack.nats.url, name)
        deadline = time.monotonic() + 60
        while (stored := await asyncio.to_thread(stack.stored, name)) != (out["results"] + out["failures"],) * 2:
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        out["analyzer_rows"], out["analyzer_runs"] = stored or (None, None)
        out["duplicates"] += (stored[0] - stored[1]) if stored else 0
        out["killed_at_runs"] = killed
        return out
    finally:
        stack.stop()


def run(reps: int = 40) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="podtax-fault-") as tmp:
        return asyncio.run(scenario(Path(tmp), reps))


if __name__ == "__main__":
    print(run(*map(int, sys.argv[1:2])))
