"""Table-driven tests of every filter plugin (pure: no API server)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from podtax_scheduler import filters as F
from podtax_scheduler.model import NodeInfo, PodInfo

from tests.scheduler.sched_objects import affinity, node, pod, with_uid


def P(**kw: Any) -> PodInfo:  # noqa: N802
    return PodInfo.from_dict(with_uid(pod("p", **kw)))


def N(name: str = "n1", **kw: Any) -> NodeInfo:  # noqa: N802
    return NodeInfo.from_dict(node(name, **kw))


NS = {"key": "dedicated", "value": "bench", "effect": "NoSchedule"}
NE = {"key": "dedicated", "value": "bench", "effect": "NoExecute"}
PREFER = {"key": "dedicated", "value": "bench", "effect": "PreferNoSchedule"}

TAINT_CASES = [
    ("no taints", [], [], None),
    ("NoSchedule untolerated", [NS], [], "node(s) had untolerated taint {dedicated: bench}"),
    ("NoExecute untolerated", [NE], [], "node(s) had untolerated taint {dedicated: bench}"),
    ("PreferNoSchedule ignored", [PREFER], [], None),
    ("Equal match", [NS], [{"key": "dedicated", "operator": "Equal", "value": "bench", "effect": "NoSchedule"}], None),
    ("Equal wrong value", [NS], [{"key": "dedicated", "operator": "Equal", "value": "x"}],
     "node(s) had untolerated taint {dedicated: bench}"),
    ("default operator is Equal", [NS], [{"key": "dedicated", "value": "bench"}], None),
    ("Exists on key", [NS, NE], [{"key": "dedicated", "operator": "Exists"}], None),
    ("Exists wrong effect", [NE], [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
     "node(s) had untolerated taint {dedicated: bench}"),
    ("empty key with Exists tolerates all", [NS, NE, {"key": "other", "value": "", "effect": "NoSchedule"}],
     [{"operator": "Exists"}], None),
    ("empty key with Equal tolerates nothing", [NS], [{"operator": "Equal"}],
     "node(s) had untolerated taint {dedicated: bench}"),
    ("second taint untolerated", [NS, {"key": "gpu", "value": "", "effect": "NoSchedule"}],
     [{"key": "dedicated", "operator": "Exists"}], "node(s) had untolerated taint {gpu: }"),
]


@pytest.mark.parametrize(("taints", "tolerations", "want"), [c[1:] for c in TAINT_CASES],
                         ids=[c[0] for c in TAINT_CASES])
def test_taint_toleration(taints: list[dict[str, str]], tolerations: list[dict[str, Any]], want: str | None) -> None:
    assert F.TaintToleration().filter(P(tolerations=tolerations), N(taints=taints)) == want


LABELS = {"zone": "a", "disk": "ssd", "cores": "16"}
AFF_CASES = [
    ("nothing required", {}, None, None),
    ("nodeSelector match", {"zone": "a"}, None, None),
    ("nodeSelector mismatch", {"zone": "b"}, None, F.NodeAffinity.REASON),
    ("nodeSelector missing label", {"rack": "1"}, None, F.NodeAffinity.REASON),
    ("In", {}, [[{"key": "zone", "operator": "In", "values": ["a", "b"]}]], None),
    ("In miss", {}, [[{"key": "zone", "operator": "In", "values": ["c"]}]], F.NodeAffinity.REASON),
    ("NotIn", {}, [[{"key": "zone", "operator": "NotIn", "values": ["c"]}]], None),
    ("NotIn miss", {}, [[{"key": "zone", "operator": "NotIn", "values": ["a"]}]], F.NodeAffinity.REASON),
    ("NotIn absent key matches", {}, [[{"key": "rack", "operator": "NotIn", "values": ["1"]}]], None),
    ("Exists", {}, [[{"key": "disk", "operator": "Exists"}]], None),
    ("Exists miss", {}, [[{"key": "gpu", "operator": "Exists"}]], F.NodeAffinity.REASON),
    ("DoesNotExist", {}, [[{"key": "gpu", "operator": "DoesNotExist"}]], None),
    ("DoesNotExist miss", {}, [[{"key": "disk", "operator": "DoesNotExist"}]], F.NodeAffinity.REASON),
    ("Gt", {}, [[{"key": "cores", "operator": "Gt", "values": ["8"]}]], None),
    ("Gt miss", {}, [[{"key": "cores", "operator": "Gt", "values": ["16"]}]], F.NodeAffinity.REASON),
    ("Lt", {}, [[{"key": "cores", "operator": "Lt", "values": ["32"]}]], None),
    ("Lt miss", {}, [[{"key": "cores", "operator": "Lt", "values": ["4"]}]], F.NodeAffinity.REASON),
    ("Gt non-integer label", {}, [[{"key": "zone", "operator": "Gt", "values": ["1"]}]], F.NodeAffinity.REASON),
    ("expressions ANDed", {}, [[{"key": "zone", "operator": "In", "values": ["a"]},
                                {"key": "disk", "operator": "In", "values": ["hdd"]}]], F.NodeAffinity.REASON),
    ("terms ORed", {}, [[{"key": "zone", "operator": "In", "values": ["z"]}],
                        [{"key": "disk", "operator": "In", "values": ["ssd"]}]], None),
    ("selector AND affinity", {"zone": "b"}, [[{"key": "disk", "operator": "Exists"}]], F.NodeAffinity.REASON),
    ("empty term matches nothing", {}, [[]], F.NodeAffinity.REASON),
]


@pytest.mark.parametrize(("selector", "terms", "want"), [c[1:] for c in AFF_CASES], ids=[c[0] for c in AFF_CASES])
def test_node_affinity(selector: dict[str, str], terms: list[list[dict[str, Any]]] | None, want: str | None) -> None:
    p = P(node_selector=selector, affinity=affinity(*terms) if terms is not None else None)
    assert F.NodeAffinity().filter(p, N(labels=LABELS)) == want


def test_match_fields_on_node_name() -> None:
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    assert F.NodeAffinity().filter(P(affinity=aff), N("n1")) is None
    assert F.NodeAffinity().filter(P(affinity=aff), N("n2")) == F.NodeAffinity.REASON


@pytest.mark.parametrize(("ready", "want"), [(True, None), (False, F.NodeReady.REASON)])
def test_node_ready(ready: bool, want: str | None) -> None:
    assert F.NodeReady().filter(P(), N(ready=ready)) == want


def test_node_without_conditions_is_not_ready() -> None:
    obj = node("n1")
    obj["status"].pop("conditions")
    assert F.NodeReady().filter(P(), NodeInfo.from_dict(obj)) == F.NodeReady.REASON


UNSCHED_CASES = [
    ("schedulable", False, [], None),
    ("cordoned", True, [], "node(s) were unschedulable"),
    ("cordoned but tolerated", True, [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                       "effect": "NoSchedule"}], None),
]


@pytest.mark.parametrize(("cordoned", "tolerations", "want"), [c[1:] for c in UNSCHED_CASES],
                         ids=[c[0] for c in UNSCHED_CASES])
def test_node_unschedulable(cordoned: bool, tolerations: list[dict[str, Any]], want: str | None) -> None:
    assert F.NodeUnschedulable().filter(P(tolerations=tolerations), N(unschedulable=cordoned)) == want


ARCH_CASES = [
    ("no requirement", {}, {}, "arm64", None),
    ("podtax.io/arch match", {"podtax.io/arch": "arm64"}, {}, "arm64", None),
    ("podtax.io/arch mismatch", {"podtax.io/arch": "arm64"}, {}, "amd64", F.NodeArchitecture.REASON),
    ("alias x86_64", {"podtax.io/arch": "x86_64"}, {}, "amd64", None),
    ("nodeSelector arch", {}, {"kubernetes.io/arch": "amd64"}, "arm64", F.NodeArchitecture.REASON),
    ("nodeSelector arch match", {}, {"kubernetes.io/arch": "arm64"}, "arm64", None),
    # uname -m of a 32-bit Raspberry Pi OS (Pi 2-4, Pi 1/Zero) and Debian's names: the node says arm
    ("alias armv7l", {"podtax.io/arch": "armv7l"}, {}, "arm", None),
    ("alias armv6l", {"podtax.io/arch": "armv6l"}, {}, "arm", None),
    ("alias armhf", {"podtax.io/arch": "armhf"}, {}, "arm", None),
    ("32-bit arm is not arm64", {"podtax.io/arch": "armv7l"}, {}, "arm64", F.NodeArchitecture.REASON),
    ("alias i686", {"podtax.io/arch": "i686"}, {}, "386", None),
    # a 32-bit userland on a 64-bit ARM kernel (uname -m armv8l) is Go's arm, not arm64; older x86 uname -m; Debian's
    # names of the little-endian 64-bit POWER and MIPS ports and 32-bit MIPS
    ("alias armv8l", {"podtax.io/arch": "armv8l"}, {}, "arm", None),
    ("armv8l is not arm64", {"podtax.io/arch": "armv8l"}, {}, "arm64", F.NodeArchitecture.REASON),
    ("alias i486", {"podtax.io/arch": "i486"}, {}, "386", None),
    ("alias i586", {"podtax.io/arch": "i586"}, {}, "386", None),
    ("alias ppc64el", {"podtax.io/arch": "ppc64el"}, {}, "ppc64le", None),
    ("alias mips64el", {"podtax.io/arch": "mips64el"}, {}, "mips64le", None),
    ("alias mipsel", {"podtax.io/arch": "mipsel"}, {}, "mipsle", None),
]


@pytest.mark.parametrize(("labels", "selector", "node_arch", "want"), [c[1:] for c in ARCH_CASES],
                         ids=[c[0] for c in ARCH_CASES])
def test_node_architecture(labels: dict[str, str], selector: dict[str, str], node_arch: str,
                           want: str | None) -> None:
    assert F.NodeArchitecture().filter(P(labels=labels, node_selector=selector), N(arch=node_arch)) == want


def _node_with(used: dict[str, Any], count: int = 0, **kw: Any) -> NodeInfo:
    n = N(**kw)
    for i in range(count):
        n.add_pod(f"u{i}", {})
    if used:
        n.add_pod("used", PodInfo.from_dict(with_uid(pod("x", **used))).requests)
    return n


FIT_CASES = [
    ("fits", {"cpu": "1", "memory": "1Gi"}, {}, 0, {}, None),
    ("no requests fit", {}, {}, 0, {}, None),
    ("cpu exact", {"cpu": "4"}, {}, 0, {}, None),
    ("cpu millicores over", {"cpu": "4001m"}, {}, 0, {}, "Insufficient cpu"),
    ("cpu used by others", {"cpu": "500m"}, {"cpu": "3600m"}, 0, {}, "Insufficient cpu"),
    ("memory Gi", {"memory": "9Gi"}, {}, 0, {}, "Insufficient memory"),
    ("memory exponent", {"memory": "1e3"}, {}, 0, {}, None),
    ("both", {"cpu": "5", "memory": "9Gi"}, {}, 0, {}, ("Insufficient cpu", "Insufficient memory")),
    ("pod count", {}, {}, 3, {"pods": 3}, "Too many pods"),
    ("extended resource present", {"extra_requests": {"example.com/gpu": "1"}}, {}, 0,
     {"extra": {"example.com/gpu": "2"}}, None),
    ("extended resource absent", {"extra_requests": {"example.com/gpu": "1"}}, {}, 0, {},
     "Insufficient example.com/gpu"),
    ("extended resource used", {"extra_requests": {"example.com/gpu": "1"}},
     {"extra_requests": {"example.com/gpu": "2"}}, 0, {"extra": {"example.com/gpu": "2"}},
     "Insufficient example.com/gpu"),
]


@pytest.mark.parametrize(("req", "used", "count", "node_kw", "want"), [c[1:] for c in FIT_CASES],
                         ids=[c[0] for c in FIT_CASES])
def test_node_resources_fit(req: dict[str, Any], used: dict[str, Any], count: int, node_kw: dict[str, Any],
                            want: Any) -> None:
    assert F.NodeResourcesFit().filter(P(**req), _node_with(used, count, **node_kw)) == want


def test_failure_message_in_kube_scheduler_style() -> None:
    statuses = ["node(s) were unschedulable"] * 2 + ["Insufficient cpu"] * 3
    assert F.failure_message(5, F.count_reasons(statuses)) == \
        "0/5 nodes are available: 2 node(s) were unschedulable, 3 Insufficient cpu."
    both = F.count_reasons([("Insufficient cpu", "Insufficient memory"), "Insufficient cpu", None])
    assert both == Counter({"Insufficient cpu": 2, "Insufficient memory": 1})
    assert F.failure_message(0, Counter()).startswith("0/0 nodes are available")


def test_run_filters_returns_first_failure() -> None:
    n = N(unschedulable=True, ready=False)
    assert F.run_filters(P(), n) == F.NodeUnschedulable.REASON
    assert F.run_filters(P(), N()) is None
