"""`make demo`: the main job on one machine, start to finish, in a few minutes.

Starts `podtax up` (embedded nats-server, every service, a local DuckDB, and a SIMULATED
Kubernetes API whose one node is this host, running pods as real local processes in cgroups),
submits a small host + pod campaign of real sysbench runs, follows it, prints the results and the
comparison report, and shuts everything down. One pod cell runs 2 threads under a 1-CPU limit,
so the report shows a real, THROTTLED slowdown next to the cells where pod and host agree.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml

from podtax.cli.main import main as cli


def campaign(node: str, threads: int) -> dict:
    return {
        "name": "demo",
        "nodes": [node],
        "environments": ["host", "kubernetes"],
        "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 10000, "events": 2000, "time": 30},
                   "matrix": {"threads": [1, "all"]}}],
        "repetitions": {"min": 6, "max": 6},
        # A Guaranteed pod with one CPU: the `all` cell runs `threads` threads under a 1-CPU limit.
        "pod": {"image": "ghcr.io/podtax/bench:0.1.0", "requests": {"cpu": "1", "memory": "256Mi"},
                "limits": {"cpu": "1", "memory": "256Mi"}},
        "timeout": 120,
        "seed": 1,
    }


def wait_for_node(node: str, timeout: float = 60) -> None:
    import asyncio

    from podtax.bus import Bus
    from podtax.cli.common import nats_url
    from podtax.subjects import RUNNER_BUCKET, node_key

    async def known() -> bool:
        bus = await Bus.connect(nats_url(), "podtax/demo")
        try:
            doc = await Bus.kv_json(await bus.kv(RUNNER_BUCKET), node_key(node)) or {}
            return bool(doc.get("host_agent") and doc.get("kubernetes"))
        finally:
            await bus.close()

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if asyncio.run(known()):
            return
        time.sleep(0.5)
    raise SystemExit(f"node {node} was not reported by the host agent and the emulator within {timeout:.0f} s")


def main(argv: list[str] | None = None) -> int:
    data = Path(os.environ.get("PODTAX_DEMO_DIR", ".podtax/demo")).resolve()
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    os.environ["PODTAX_DATA_DIR"] = str(data)
    os.environ.pop("PODTAX_NATS_URL", None)
    node = socket.gethostname()
    ready = data / "ready.json"
    from podtax import natsserver

    api_port = natsserver.free_port()
    up = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(data), "--node", node,
                           "--api-port", str(api_port), "--ready-file", str(ready), "--exec-kubelet"])
    try:
        deadline = time.monotonic() + 90
        while not ready.exists():
            if up.poll() is not None or time.monotonic() > deadline:
                print(f"podtax up failed; see the logs in {data / 'logs'}", file=sys.stderr)
                return 1
            time.sleep(0.2)
        info = json.loads(ready.read_text())
        os.environ["PODTAX_NATS_URL"] = info["nats_url"]
        os.environ["PODTAX_API_URL"] = info["api_url"]
        wait_for_node(node)
        path = data / "demo-campaign.yaml"
        path.write_text(yaml.safe_dump(campaign(node, os.cpu_count() or 1), sort_keys=False))
        print(f"\n== campaign {path}\n{path.read_text()}")
        if cli(["campaign", "submit", str(path)]) != 0:
            return 1
        if cli(["campaign", "status", "demo", "--follow", "--timeout", "600"]) != 0:
            print("the campaign did not finish in time", file=sys.stderr)
            return 1
        time.sleep(2)  # the last results reach DuckDB
        print("\n== results stored in DuckDB")
        code = cli(["results", "--campaign", "demo", "--limit", "100"])
        print("\n== podtax report demo")
        code = code or cli(["report", "demo"])
        html, xlsx = data / "report" / "demo.html", data / "report" / "demo.xlsx"
        print("\n== the HTML report and the workbook (made by the analyzer, fetched over its HTTP API)")
        code = code or cli(["report", "demo", "--html", str(html)]) or cli(["export", "demo", "--xlsx", str(xlsx)])
        if code == 0:
            print(f"HTML report: {html}\nworkbook:    {xlsx}")
        return code
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(30)
        except subprocess.TimeoutExpired:
            up.kill()


if __name__ == "__main__":
    sys.exit(main())
