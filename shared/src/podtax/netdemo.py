"""The demo's network cell: iperf3 and sockperf, host networking (host->host, loopback) against pod
networking (pod->pod through the SIMULATED Kubernetes API's exec kubelet, whose pods get real
network namespaces, veth pairs and a bridge), a few seconds a run, 6 runs a side, interleaved.

`make demo` submits `campaign(node)` to `podtax up --exec-kubelet --pod-network` (runner, host agent,
parser, analyzer) and prints `podtax report demo-network`. `python -m podtax.netdemo [DIR]` runs the
same cell without the services (podtax.netbench, a DuckDB file, `podtax report --db`).
Root, iproute2, iperf3 and sockperf are needed.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

CAMPAIGN = "demo-network"
CELLS = (("iperf3", {"duration": 2, "port": 15301}), ("sockperf", {"duration": 1, "port": 15311}))


def campaign(node: str) -> dict:
    """The demo's network campaign through the whole system (runner, host agent, parser, analyzer)."""
    return {"name": CAMPAIGN, "nodes": [node], "environments": ["host", "kubernetes"],
            "tests": [{"test": test, "params": {**params, "topology": "pod->pod"}} for test, params in CELLS],
            "repetitions": {"min": 6, "max": 6}, "timeout": 60, "seed": 1}


def unavailable() -> str:
    from podtax_kubesim import podnet

    missing = [tool for tool in ("iperf3", "sockperf") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (apt-get install iperf3 sockperf)"
    return podnet.unavailable()


def run(data: Path, repetitions: int = 6) -> int:
    from kubernetes import client
    from podtax_analyzer.store import Store
    from podtax_kubesim import testing

    from podtax import netbench
    from podtax.cli.main import main as cli

    why = unavailable()
    if why:
        print(f"\n== network cell skipped: {why}")
        return 0
    print("\n== the network tax: iperf3 and sockperf, host->host (loopback) vs pod->pod (network namespaces, "
          "veth, bridge in the SIMULATED API's exec kubelet)")
    data.mkdir(parents=True, exist_ok=True)
    db = data / "network.duckdb"
    sim = testing.start({"nodes": [{"name": "node-0"}]}, kubelet="exec", workdir=data / "netsim", pod_network=True)
    try:
        pods = netbench.Pods(client.CoreV1Api(sim.api_client()))
        outcomes = []
        for test, params in CELLS:
            outcomes += netbench.measure(CAMPAIGN, test, params, "pod->pod", repetitions, node="node-0", pods=pods)
    finally:
        sim.stop()
    store = Store(db)
    try:
        store.write_batch(outcomes)
    finally:
        store.close()
    failed = [o.data for o in outcomes if o.type.endswith("failed.v1")]
    for f in failed:
        print(f"run {f.run.run_id} failed: {f.reason}: {f.detail}", file=sys.stderr)
    return cli(["report", CAMPAIGN, "--db", str(db)])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    return run(Path(args[0] if args else ".podtax/netdemo").resolve())


if __name__ == "__main__":
    sys.exit(main())
