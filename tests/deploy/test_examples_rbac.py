"""Every example campaign works with deploy/k8s's RBAC: each Kubernetes object its runs create lands in a
namespace where the runner's Role lets it create that kind (volumes.yaml named `podtax-volumes`, which the
Role, granted in podtax-runs only, does not cover: every volume-churn run would have been refused)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax import campaign, netbench, templates

from tests.deploy._util import K8S, REPO, load_all

EXAMPLES = sorted((REPO / "examples" / "campaigns").glob("*.yaml"))
# the examples that create objects in Kubernetes (a host-only or nomad-only one creates none there)
IN_KUBERNETES = [p for p in EXAMPLES if "kubernetes" in campaign.load(p).environments]
CONTROL_PLANE_KINDS = {"volume-churn": "persistentvolumeclaims", "pod-startup": "pods"}


def runner_namespace() -> str:
    kust = load_all(K8S / "kustomization.yaml")[0]
    literals = dict(lit.split("=", 1) for gen in kust["configMapGenerator"] for lit in gen.get("literals", []))
    return literals["PODTAX_RUNNER_NAMESPACE"]


def granted(namespace: str, resource: str) -> bool:
    """Whether a Role bound to the runner's service account in `namespace` allows creating `resource`."""
    objects = load_all(K8S / "runner.yaml")
    bound = {o["roleRef"]["name"] for o in objects if o["kind"] == "RoleBinding"
             and o["metadata"]["namespace"] == namespace
             and {"kind": "ServiceAccount", "name": "podtax-runner", "namespace": "podtax"} in o["subjects"]}
    return any(o["kind"] == "Role" and o["metadata"]["name"] in bound and o["metadata"]["namespace"] == namespace
               and resource in rule["resources"] and "create" in rule["verbs"]
               for o in objects for rule in o.get("rules", []))


def created(c: campaign.Campaign, default: str) -> set[tuple[str, str]]:
    """(namespace, resource) of every Kubernetes object the campaign's runs create."""
    out: set[tuple[str, str]] = set()
    for t in c.tests:
        if templates.get(t.test).control_plane:
            names = {str(n) for n in t.matrix.get("namespace", [t.params.get("namespace", "")])}
            out |= {(n or default, CONTROL_PLANE_KINDS[t.test]) for n in names}
        else:
            out.add((c.pod.namespace or default, "jobs"))
            if t.test in netbench.NET_TESTS:
                out.add((c.pod.namespace or default, "pods"))  # the server pod
    return out


@pytest.mark.parametrize("path", IN_KUBERNETES, ids=lambda p: p.name)
def test_example_campaigns_stay_where_the_runner_may_create(path: Path) -> None:
    c = campaign.load(path)
    for namespace, resource in sorted(created(c, runner_namespace())):
        assert granted(namespace, resource), (
            f"{path.name}: creates {resource} in {namespace}, but deploy/k8s/runner.yaml grants the runner "
            f"no create on {resource} there")


def test_the_examples_checked_include_every_kind_of_kubernetes_run() -> None:
    tests = {t.test for p in IN_KUBERNETES for t in campaign.load(p).tests}
    assert {"volume-churn", "pod-startup", "iperf3", "sysbench-cpu"} <= tests, tests


def test_the_check_sees_a_namespace_the_role_does_not_grant() -> None:
    assert granted(runner_namespace(), "persistentvolumeclaims")
    assert not granted("podtax-volumes", "persistentvolumeclaims")
