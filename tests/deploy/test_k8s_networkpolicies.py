"""deploy/k8s NetworkPolicies (issue 12, item 6): the analyzer API is reachable only from the CLI /
ingress namespace and Prometheus, NATS only from podtax's services (and host agents, NATS peers)."""

from __future__ import annotations

from tests.deploy._util import K8S, load_all
from tests.deploy.test_k8s_manifests import deserialize

POLICIES = {o["metadata"]["name"]: o for o in load_all(K8S / "networkpolicies.yaml")}


def sources(policy: dict, port: str) -> list[dict]:
    return [peer for rule in policy["spec"]["ingress"] if any(p["port"] == port for p in rule["ports"])
            for peer in rule["from"]]


def test_policies_are_valid_objects_listed_in_the_kustomization() -> None:
    assert "networkpolicies.yaml" in (K8S / "kustomization.yaml").read_text()
    for policy in POLICIES.values():
        deserialize(policy)
        assert policy["metadata"]["namespace"] == "podtax" and policy["spec"]["policyTypes"] == ["Ingress"]


def test_analyzer_api_only_from_the_cli_namespace_and_prometheus() -> None:
    policy = POLICIES["analyzer-ingress"]
    assert policy["spec"]["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "analyzer"}
    peers = sources(policy, "http")
    assert len(peers) == 2 and all("ipBlock" not in p for p in peers)
    assert {"podtax.io/analyzer-client": "true"} in [p["namespaceSelector"]["matchLabels"] for p in peers]
    prom = [p for p in peers if "podSelector" in p]
    assert prom and prom[0]["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "prometheus"}
    assert all(p.get("namespaceSelector", {}).get("matchLabels") for p in peers), "never every namespace"


def test_nats_only_from_podtax_services() -> None:
    policy = POLICIES["nats-ingress"]
    peers = sources(policy, "client")
    pods = [p for p in peers if "podSelector" in p]
    assert all("namespaceSelector" not in p for p in pods), "pods of the podtax namespace only"
    names = pods[0]["podSelector"]["matchExpressions"][0]["values"]
    assert sorted(names) == ["analyzer", "parser", "runner", "scheduler"]
    assert all(p["ipBlock"]["cidr"] != "0.0.0.0/0" for p in peers if "ipBlock" in p)


def test_analyzer_reads_its_token_from_a_secret() -> None:
    analyzer = next(o for o in load_all(K8S / "analyzer.yaml") if o["kind"] == "StatefulSet")
    env = {e["name"]: e for e in analyzer["spec"]["template"]["spec"]["containers"][0]["env"]}
    ref = env["PODTAX_API_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert ref["name"] == "podtax-api-token" and "value" not in env["PODTAX_API_TOKEN"]
