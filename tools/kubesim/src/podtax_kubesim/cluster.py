"""Cluster files: nodes (labels, capacity/allocatable, taints, conditions), storage classes,
namespaces and simulation settings, turned into API objects."""

from __future__ import annotations

import copy
import ipaddress
import math
from pathlib import Path
from typing import Any

import yaml

from podtax_kubesim import cluster_checks
from podtax_kubesim.util import SIM_VERSION, SIMULATED_ANNOTATION, Obj, now

DEFAULT_CLUSTER: Obj = {
    "nodes": [
        {"name": "x86-{i}", "count": 2, "arch": "amd64", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
        {"name": "rpi-{i}", "count": 1, "arch": "arm64", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
         "labels": {"node.kubernetes.io/instance-type": "raspberry-pi-4"}},
    ],
    "storageClasses": [{"metadata": {"name": "standard", "annotations": {
        "storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "kubesim.podtax.io/hostpath"}],
}
SYSTEM_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"]


# A node is a few hundred bytes to 1 KB of YAML (5,000 nodes with ten labels each, written one by one: 4.3 MB); PyYAML
# took minutes over a 50 MB file. libyaml's loader (when PyYAML has it) reads that 4.3 MB file in 3.3 s against 8.8.
MAX_CLUSTER_BYTES = 16 * 1024 * 1024


class RepeatedKey(yaml.YAMLError):
    """A key given twice in one mapping of a cluster file: its words name the line of each."""


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (libyaml's when present) refusing a key repeated in one mapping: YAML keeps the last value
    without a word (`nodes:` twice served the second list only; sweep hU, session 56)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if (key.tag, key.value) in first:
                    raise RepeatedKey(f"line {key.start_mark.line + 1}: key {key.value!r} appears twice in the same "
                                      f"mapping (first on line {first[key.tag, key.value]}); keep one of them")
                first[key.tag, key.value] = key.start_mark.line + 1
        return super().construct_mapping(node, deep)


def read_yaml(path: Path | str) -> Any:
    """A cluster file's YAML; OSError when it cannot be read, ValueError (with the line) when it is not YAML
    text or holds more than MAX_CLUSTER_BYTES. The Nomad emulator's cluster files are read with it too."""
    with Path(path).open("rb") as f:
        data = f.read(MAX_CLUSTER_BYTES + 1)
    if len(data) > MAX_CLUSTER_BYTES:
        raise ValueError(f"{path} holds more than {MAX_CLUSTER_BYTES // 1024 // 1024} MiB: a cluster file is YAML "
                         "of a few hundred bytes per node; write nodes alike as one entry with `count: N` and `{i}` "
                         "in its name (name: worker-{i}, count: 5000), or give the cluster file")
    try:
        return yaml.load(data.decode(), Loader=_Loader)  # noqa: S506 - a safe loader (libyaml's when present)
    except RepeatedKey as exc:
        raise ValueError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:  # a traceback before (audit)
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise ValueError(f"{path} is not valid YAML{line}: {getattr(exc, 'problem', None) or exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a text file: a cluster file is YAML") from None
    except ValueError as exc:  # YAML's int() past 4,300 digits (its words named sys.set_int_max_str_digits()) or
        if "integer string conversion" in str(exc):  # a date like 2024-13-01 ('month must be in 1..12')
            raise ValueError(f"{path} holds a number of more than 4,300 digits: no setting takes a number so long; "
                             "write the value the setting needs") from None
        raise ValueError(f"{path}: {exc} (YAML reads an unquoted value of this form as a date or a number: quote it "
                         "if it is text)") from None


def load(cluster: dict | Path | str | None) -> Obj:
    if cluster is None:
        return copy.deepcopy(DEFAULT_CLUSTER)
    if isinstance(cluster, dict):
        check_resync(cluster, "cluster")
        return copy.deepcopy(cluster)
    data = read_yaml(cluster)
    if not isinstance(data, dict):
        raise ValueError(f"{cluster}: a cluster file must be a mapping with a 'nodes' list")
    for key in ("nodes", "storageClasses"):
        entries = data.get(key) or []
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ValueError(f"{cluster}: '{key}' must be a list of mappings (e.g. '- name: node-1')")
    if why := cluster_checks.problem(data, str(cluster)):
        raise ValueError(why)
    check_resync(data, str(cluster))
    return data


def check_resync(data: Obj, where: str) -> None:
    """ValueError unless provisioner.resyncSeconds, when given, is a number greater than 0: at 0 or less the PV
    controller's resync rescheduled itself at once for ever (one CPU busy, the API 30 times slower; review r8)."""
    provisioner = data.get("provisioner")
    value = provisioner.get("resyncSeconds") if isinstance(provisioner, dict) else None
    try:
        seconds = float(value) if value is not None else 1.0
    except (TypeError, ValueError):
        seconds = math.nan
    if not seconds > 0:  # NaN too
        raise ValueError(f"{where}: provisioner.resyncSeconds must be a number of seconds greater than 0 (the PV "
                         f"controller's resync of Pending claims; default 15), got {value!r}")


def generated(nodes: int, arch_mix: bool = True, cpu: str = "16", memory: str = "64Gi") -> Obj:
    """A large synthetic cluster for scale runs: `nodes` nodes, every tenth one arm64."""
    spec: list[Obj] = [{"name": "node-{i}", "count": nodes - nodes // 10 if arch_mix else nodes, "arch": "amd64",
                        "capacity": {"cpu": cpu, "memory": memory, "pods": "110"}}]
    if arch_mix and nodes // 10:
        spec.append({"name": "arm-{i}", "count": nodes // 10, "arch": "arm64",
                     "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}})
    return {"nodes": spec, "storageClasses": copy.deepcopy(DEFAULT_CLUSTER["storageClasses"])}


def expand_nodes(cluster: Obj) -> list[Obj]:
    out: list[Obj] = []
    for entry in cluster.get("nodes") or []:
        count = int(entry.get("count", 1))
        for i in range(count):
            item = dict(entry)
            numbered = count > 1 or cluster_checks.numbered(entry["name"])  # '{i:03d}' as '{i}'
            item["name"] = entry["name"].format(i=i) if numbered else entry["name"]
            out.append(item)
    return out


def node_object(spec: Obj, index: int) -> Obj:
    """A complete v1 Node from a cluster-file entry."""
    name = spec["name"]
    arch = spec.get("arch") or (spec.get("labels") or {}).get("kubernetes.io/arch", "amd64")
    labels = {"kubernetes.io/arch": arch, "beta.kubernetes.io/arch": arch, "kubernetes.io/os": "linux",
              "beta.kubernetes.io/os": "linux", "kubernetes.io/hostname": name}
    labels.update(spec.get("labels") or {})
    capacity = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    capacity.update({k: str(v) for k, v in (spec.get("capacity") or {}).items()})
    allocatable = dict(capacity)
    allocatable.update({k: str(v) for k, v in (spec.get("allocatable") or {}).items()})
    ts = now()
    conditions = {t: {"type": t, "status": "False", "reason": f"KubeletHasNo{t}", "message": "simulated"}
                  for t in ("MemoryPressure", "DiskPressure", "PIDPressure")}
    conditions["Ready"] = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                           "message": "kubelet is posting ready status (simulated by podtax kubesim)"}
    for cond in spec.get("conditions") or []:
        conditions[cond["type"]] = {**conditions.get(cond["type"], {}), **cond}
    for cond in conditions.values():
        cond.setdefault("lastHeartbeatTime", ts)
        cond.setdefault("lastTransitionTime", ts)
    ip = str(ipaddress.IPv4Address("10.0.0.0") + 10 + index)
    annotations = {SIMULATED_ANNOTATION: "true", "node.alpha.kubernetes.io/ttl": "0"}
    annotations.update(spec.get("annotations") or {})
    node_spec: Obj = {"podCIDR": f"10.{64 + index // 256 % 64}.{index % 256}.0/24",
                      "providerID": f"kubesim://{name}"}
    if spec.get("taints"):
        node_spec["taints"] = copy.deepcopy(spec["taints"])
    if spec.get("unschedulable"):
        node_spec["unschedulable"] = True
    return {
        "kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": node_spec,
        "status": {
            "capacity": capacity, "allocatable": allocatable, "conditions": list(conditions.values()),
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": f"sim-{index:08d}", "systemUUID": f"sim-{index:08d}", "bootID": "simulated",
                         "kernelVersion": spec.get("kernelVersion", "6.1.0-simulated"),
                         "osImage": spec.get("osImage", "podtax kubesim (SIMULATED node)"),
                         "containerRuntimeVersion": "kubesim://0.1.0", "kubeletVersion": SIM_VERSION,
                         "kubeProxyVersion": SIM_VERSION, "operatingSystem": "linux", "architecture": arch},
            "images": [],
        },
    }


def storage_classes(cluster: Obj) -> list[Obj]:
    out = []
    for sc in cluster.get("storageClasses") or []:
        obj: dict[str, Any] = copy.deepcopy(sc)
        obj.setdefault("metadata", {"name": obj.pop("name", "standard")})
        obj["kind"], obj["apiVersion"] = "StorageClass", "storage.k8s.io/v1"
        out.append(obj)
    return out
