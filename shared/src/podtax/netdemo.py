"""The demo's network cell: iperf3 and sockperf, host networking (host->host, loopback) against pod
networking (pod->pod through the SIMULATED Kubernetes API's exec kubelet, whose pods get real
network namespaces, veth pairs and a bridge: `podtax up --exec-kubelet --pod-network`), a few
seconds a run, 6 runs a side, interleaved by the runner like any campaign; `podtax report
demo-network` then shows the ratio with its confidence interval. (bench/bench_network_tax.py
measures the same paths without the services.)
"""

from __future__ import annotations

import os
import shutil

CAMPAIGN = "demo-network"
CELLS = (("iperf3", {"duration": 2, "port": 15301}), ("sockperf", {"duration": 1, "port": 15311}))


def campaign(node: str) -> dict:
    """The demo's network campaign through the whole system (runner, host agent, parser, analyzer)."""
    return {"name": CAMPAIGN, "nodes": [node], "environments": ["host", "kubernetes"],
            "tests": [{"test": test, "params": {**params, "topology": "pod->pod"}} for test, params in CELLS],
            "repetitions": {"min": 6, "max": 6}, "timeout": 60, "seed": 1}


def unavailable() -> str:
    """Why this machine cannot run the network cell ('' when it can)."""
    if os.geteuid() != 0:
        return "the pod network needs root (network namespaces, veth pairs, a bridge)"
    missing = [tool for tool in ("iperf3", "sockperf", "ip", "nsenter") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install iperf3 sockperf iproute2 util-linux)"
    return ""
