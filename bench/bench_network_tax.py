"""The veth/bridge tax on this machine: iperf3 throughput and sockperf round-trip time, host->host
(loopback, the anchor) against pod->pod and pod->pod-across-nodes through the kubesim exec kubelet's
real pod network; runs interleaved, medians of N (default 3) runs a side, the pod/host ratio, and
the load average before and after. Root, iproute2, iperf3 and sockperf needed.

    python bench/bench_network_tax.py [--runs 3] [--seconds 2]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

from kubernetes import client
from podtax import events, netbench
from podtax.oneline_args import OneLineParser
from podtax_kubesim import testing


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=2)
    args = ap.parse_args(argv)
    cells = (("iperf3", {"duration": args.seconds, "port": 15401}, "throughput_mbps"),
             ("sockperf", {"duration": args.seconds, "port": 15411}, "rtt_p50_us"))
    print(f"load average before: {loadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        sim = testing.start({"nodes": [{"name": "n0"}, {"name": "n1"}]}, kubelet="exec", workdir=Path(tmp),
                            pod_network=True)
        try:
            pods = netbench.Pods(client.CoreV1Api(sim.api_client()))
            for test, params, metric in cells:
                for topology in ("pod->pod", "pod->pod-across-nodes"):
                    out = netbench.measure("bench", test, params, topology, args.runs, node="n0", other_node="n1",
                                           pods=pods)
                    values: dict[str, list[float]] = {"host": [], "kubernetes": []}
                    for o in out:
                        if isinstance(o, events.ResultV1):
                            values[o.data.run.env].append(next(m.value for m in o.data.metrics if m.name == metric))
                        else:
                            print(f"  failed: {o.data.reason}: {o.data.detail}", file=sys.stderr)
                    host, pod = statistics.median(values["host"]), statistics.median(values["kubernetes"])
                    print(f"{test:8} {metric:16} host->host {host:10.2f}  {topology:22} {pod:10.2f}  "
                          f"ratio pod/host {pod / host:.3f}  (median of {len(values['host'])}/"
                          f"{len(values['kubernetes'])} runs)")
        finally:
            sim.stop()
    print(f"load average after:  {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
