"""The NetworkPolicies of podtax-runs (deploy/k8s/namespaces.yaml), evaluated as the API defines them on the
labels the runner really puts on its pods: a network test's client Job (podtax_runner.kube.job_manifest) reaches
its server pod (netbench.Pods, created in the Kubernetes emulator as the runner creates it), and every other
benchmark pod still has no network. The namespace's one deny-all policy blocked the network tests' pods too."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from kubernetes import client
from podtax import events, netbench
from podtax.campaign import PodSpec
from podtax_runner.kube import job_manifest

from tests.deploy._util import K8S, load_all
from tests.deploy.test_k8s_manifests import deserialize

NS = "podtax-runs"
NODE_ADDRESS = "10.0.0.5"  # a node in the placeholder CIDR of the pod->host rule
POLICIES = [o for o in load_all(K8S / "namespaces.yaml")
            if o["kind"] == "NetworkPolicy" and o["metadata"]["namespace"] == NS]


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, f"the evaluator knows matchLabels only: {selector}"
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def peer_matches(peer: dict[str, Any], other: dict[str, str] | str) -> bool:
    """A rule's peer against another pod of podtax-runs (its labels) or an address outside any pod."""
    if "ipBlock" in peer:
        return isinstance(other, str) and ipaddress.ip_address(other) in ipaddress.ip_network(peer["ipBlock"]["cidr"])
    assert "namespaceSelector" not in peer, "peers in podtax-runs only"
    return isinstance(other, dict) and selects(peer["podSelector"], other)


def port_matches(ports: list[dict[str, Any]] | None, protocol: str, port: int) -> bool:
    return not ports or any(p.get("protocol", "TCP") == protocol and p["port"] <= port <= p.get("endPort", p["port"])
                            for p in ports)


def admitted(pod: dict[str, str], direction: str, other: dict[str, str] | str, protocol: str, port: int) -> bool:
    """Whether `pod`'s policies let this traffic out (Egress) or in (Ingress): allowed when no policy of that type
    selects the pod, else when one rule of one of them matches (policies add up)."""
    field, peers = ("egress", "to") if direction == "Egress" else ("ingress", "from")
    mine = [p["spec"] for p in POLICIES
            if direction in p["spec"]["policyTypes"] and selects(p["spec"]["podSelector"], pod)]
    return not mine or any(
        (not rule.get(peers) or any(peer_matches(peer, other) for peer in rule[peers]))
        and port_matches(rule.get("ports"), protocol, port)
        for spec in mine for rule in spec.get(field, []))


def connects(src: dict[str, str], dst: dict[str, str] | str, protocol: str, port: int) -> bool:
    out = admitted(src, "Egress", dst, protocol, port)
    return out and (isinstance(dst, str) or admitted(dst, "Ingress", src, protocol, port))


def job_labels(test: str, **params: Any) -> dict[str, str]:
    run = events.RunSpec(run_id=f"r-{test}", campaign="net", node="n1", env="kubernetes", test=test, params=params,
                         timeout_s=60)
    return job_manifest(run, PodSpec(), NS)["spec"]["template"]["metadata"]["labels"]


@pytest.fixture(scope="module")
def pods() -> dict[str, dict[str, str]]:
    from podtax_kubesim import testing

    sim = testing.start({"nodes": [{"name": "n1"}]}, kubelet="none")
    try:
        core = client.CoreV1Api(sim.api_client())
        core.create_namespace({"metadata": {"name": NS}})  # namespaces.yaml's
        netpods = netbench.Pods(core, NS)
        server = netpods.create("n1", netbench.server_argv("iperf3", _params("iperf3"), "0.0.0.0"), "server")
        client_pod = netpods.create("n1", ["iperf3", "-c", "198.18.0.2"], "client")  # netbench.run's own client
        labels = {name: dict(core.read_namespaced_pod(name, NS).metadata.labels) for name in (server, client_pod)}
    finally:
        sim.stop()
    return {"server": labels[server], "netbench client": labels[client_pod],
            "iperf3 client": job_labels("iperf3", server="198.18.0.2"),
            "sockperf client": job_labels("sockperf", server="198.18.0.2"),
            "sysbench": job_labels("sysbench-cpu", threads=1, max_prime=2000, events=100, time=5),
            "fio": job_labels("fio", rw="read", bs="4K", size="16M", runtime=5)}


def _params(test: str) -> Any:
    from podtax import templates

    return templates.get(test).validate({"server": "198.18.0.2"})


CASES = [  # source, destination (a pod or an address), protocol, port, allowed
    ("iperf3 client", "server", "TCP", 5201, True),
    ("sockperf client", "server", "UDP", 11111, True),
    ("sockperf client", "server", "TCP", 65535, True),
    ("netbench client", "server", "TCP", 5201, True),
    ("iperf3 client", NODE_ADDRESS, "TCP", 5201, True),      # pod->host: a hostNetwork server on the node
    ("iperf3 client", "server", "TCP", 80, False),            # below the ports the templates allow
    ("iperf3 client", "8.8.8.8", "UDP", 5353, False),         # nothing outside
    ("iperf3 client", "sysbench", "TCP", 5201, False),        # no other benchmark pod
    ("server", "iperf3 client", "TCP", 5201, False),          # a server opens nothing
    ("sysbench", "server", "TCP", 5201, False),               # ordinary benchmark pods: no network at all
    ("sysbench", NODE_ADDRESS, "TCP", 5201, False),
    ("fio", "8.8.8.8", "TCP", 443, False),
    ("sysbench", "fio", "TCP", 5201, False),
]


@pytest.mark.parametrize(("src", "dst", "protocol", "port", "allowed"), CASES,
                         ids=[f"{c[0]}->{c[1]} {c[2]}/{c[3]}" for c in CASES])
def test_runs_namespace_policies(pods: dict[str, dict[str, str]], src: str, dst: str, protocol: str, port: int,
                                 allowed: bool) -> None:
    target = pods.get(dst, dst)
    assert connects(pods[src], target, protocol, port) is allowed


def test_runs_policies_are_valid_objects() -> None:
    names = set()
    for policy in POLICIES:
        deserialize(policy)
        names.add(policy["metadata"]["name"])
    assert names == {"benchmark-pods-no-network", "network-test-clients", "network-test-servers"}
