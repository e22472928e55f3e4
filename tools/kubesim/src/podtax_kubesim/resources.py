"""The resource types the emulator serves, as discovery and routing see them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Resource:
    plural: str
    kind: str
    group: str  # "" for core
    version: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    storage: str = ""  # name of the backing store when it differs from plural (a view)
    singular: str = field(default="")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def store_key(self) -> str:
        return self.storage or f"{self.group}/{self.plural}"

    @property
    def verbs(self) -> list[str]:
        return ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


RESOURCES: list[Resource] = [
    Resource("namespaces", "Namespace", "", "v1", False, ("ns",), ("status", "finalize")),
    Resource("nodes", "Node", "", "v1", False, ("no",), ("status",)),
    Resource("pods", "Pod", "", "v1", True, ("po",), ("status", "binding", "log", "eviction"), ("all",)),
    Resource("events", "Event", "", "v1", True, ("ev",)),
    Resource("persistentvolumeclaims", "PersistentVolumeClaim", "", "v1", True, ("pvc",), ("status",)),
    Resource("persistentvolumes", "PersistentVolume", "", "v1", False, ("pv",), ("status",)),
    Resource("configmaps", "ConfigMap", "", "v1", True, ("cm",)),
    Resource("serviceaccounts", "ServiceAccount", "", "v1", True, ("sa",)),
    Resource("jobs", "Job", "batch", "v1", True, (), ("status",), ("all",)),
    Resource("leases", "Lease", "coordination.k8s.io", "v1", True),
    Resource("storageclasses", "StorageClass", "storage.k8s.io", "v1", False, ("sc",)),
    Resource("events", "Event", "events.k8s.io", "v1", True, (), storage="/events"),
]

BY_PATH: dict[tuple[str, str, str], Resource] = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_KEY: dict[str, Resource] = {r.store_key: r for r in RESOURCES if not r.storage}
GROUPS: dict[str, list[str]] = {}
for _r in RESOURCES:
    if _r.group and _r.version not in GROUPS.setdefault(_r.group, []):
        GROUPS[_r.group].append(_r.version)

PODS = "/pods"
NODES = "/nodes"
NAMESPACES = "/namespaces"
EVENTS = "/events"
PVCS = "/persistentvolumeclaims"
PVS = "/persistentvolumes"
JOBS = "batch/jobs"
LEASES = "coordination.k8s.io/leases"
STORAGECLASSES = "storage.k8s.io/storageclasses"


def find(group: str, version: str, plural: str) -> Resource | None:
    return BY_PATH.get((group, version, plural))


def discovery_list(group: str, version: str) -> dict:
    """An APIResourceList for /api/v1 or /apis/{group}/{version}."""
    items = []
    for r in RESOURCES:
        if r.group != group or r.version != version:
            continue
        items.append({"name": r.plural, "singularName": r.singular or r.kind.lower(), "namespaced": r.namespaced,
                      "kind": r.kind, "verbs": r.verbs, "shortNames": list(r.short_names),
                      "categories": list(r.categories)})
        for sub in r.subresources:
            kind = {"binding": "Binding", "eviction": "Eviction", "log": "Pod"}.get(sub, r.kind)
            verbs = {"binding": ["create"], "eviction": ["create"], "log": ["get"]}.get(sub, ["get", "patch", "update"])
            items.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                          "kind": kind, "verbs": verbs})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}" if group else version,
            "resources": items}


def group_list() -> dict:
    groups = []
    for group, versions in GROUPS.items():
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": gvs, "preferredVersion": gvs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

POD = BY_PATH[("", "v1", "pods")]
JOB = BY_PATH[("batch", "v1", "jobs")]
PVC = BY_PATH[("", "v1", "persistentvolumeclaims")]
PV = BY_PATH[("", "v1", "persistentvolumes")]
NODE = BY_PATH[("", "v1", "nodes")]
NAMESPACE = BY_PATH[("", "v1", "namespaces")]
STORAGECLASS = BY_PATH[("storage.k8s.io", "v1", "storageclasses")]
