"""OpenAPI v3 for the implemented resources, and server-side field validation, so `kubectl apply`
works with validation on (its default): kubectl reads `/openapi/v3`, finds each kind's PATCH
operation declaring the `fieldValidation` query parameter, and then leaves validation to the server
(`?fieldValidation=Strict|Warn|Ignore`). The server here knows the fields of ObjectMeta, each kind's
top level and the first level of the specs it implements (Pod, PVC, PV, Job, Node, Namespace, Lease,
StorageClass, ConfigMap, ServiceAccount); an unknown field there is refused like a real API server
does (400 BadRequest, `strict decoding error: unknown field "spec.containres"`) under Strict, and
reported in a `Warning` header under Warn. Deeper levels are not checked (said so in the README).
The component schemas list the known field names only (no types): `kubectl explain` shows names.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from podtax_kubesim import resources as R
from podtax_kubesim.util import KUBE_VERSION, ApiError, Obj

OBJECT_META = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
               "ownerReferences", "finalizers", "managedFields")
COMMON = ("apiVersion", "kind", "metadata")
_SPEC_STATUS = ("spec", "status")
TOP: dict[str, tuple[str, ...]] = {
    "Namespace": _SPEC_STATUS, "Node": _SPEC_STATUS, "Pod": _SPEC_STATUS, "PersistentVolumeClaim": _SPEC_STATUS,
    "PersistentVolume": _SPEC_STATUS, "Job": _SPEC_STATUS, "Lease": ("spec",),
    "ConfigMap": ("data", "binaryData", "immutable"),
    "ServiceAccount": ("secrets", "imagePullSecrets", "automountServiceAccountToken"),
    "StorageClass": ("provisioner", "parameters", "reclaimPolicy", "mountOptions", "allowVolumeExpansion",
                     "volumeBindingMode", "allowedTopologies"),
}
SPEC: dict[str, tuple[str, ...]] = {
    "Pod": ("volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
            "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy", "nodeSelector",
            "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName", "hostNetwork",
            "hostPID", "hostIPC", "shareProcessNamespace", "securityContext", "imagePullSecrets", "hostname",
            "subdomain", "affinity", "schedulerName", "tolerations", "hostAliases", "priorityClassName", "priority",
            "dnsConfig", "readinessGates", "runtimeClassName", "enableServiceLinks", "preemptionPolicy", "overhead",
            "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates",
            "resourceClaims", "resources"),
    "PersistentVolumeClaim": ("accessModes", "selector", "resources", "volumeName", "storageClassName", "volumeMode",
                              "dataSource", "dataSourceRef", "volumeAttributesClassName"),
    "PersistentVolume": ("capacity", "accessModes", "claimRef", "persistentVolumeReclaimPolicy", "storageClassName",
                         "mountOptions", "volumeMode", "nodeAffinity", "volumeAttributesClassName", "hostPath",
                         "local", "csi", "nfs"),
    "Job": ("parallelism", "completions", "activeDeadlineSeconds", "podFailurePolicy", "successPolicy",
            "backoffLimit", "backoffLimitPerIndex", "maxFailedIndexes", "selector", "manualSelector", "template",
            "ttlSecondsAfterFinished", "completionMode", "suspend", "podReplacementPolicy", "managedBy"),
    "Node": ("podCIDR", "podCIDRs", "providerID", "unschedulable", "taints", "configSource", "externalID"),
    "Namespace": ("finalizers",),
    "Lease": ("holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions",
              "strategy", "preferredHolder"),
}
_PARAMS = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
           for n in ("dryRun", "fieldManager", "fieldValidation")]


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _schema_name(r: R.Resource) -> str:
    return f"io.k8s.podtax.kubesim.{r.group or 'core'}.{r.version}.{r.kind}"


def _operation(r: R.Resource, action: str, verb: str) -> Obj:
    return {"operationId": f"{verb}{r.kind}", "parameters": _PARAMS if verb != "read" else [],
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {
                "$ref": f"#/components/schemas/{_schema_name(r)}"}}}}},
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind}}


_FIELD = {"description": "(type not modelled by podtax kubesim)"}


def _fields(names: tuple[str, ...]) -> dict[str, Any]:
    return {name: dict(_FIELD) for name in names}


def _schema(r: R.Resource) -> Obj:
    props: dict[str, Any] = _fields((*COMMON, *TOP.get(r.kind, ())))
    props["metadata"] = {"type": "object", "description": "ObjectMeta", "properties": _fields(OBJECT_META)}
    if r.kind in SPEC:
        props["spec"] = {"type": "object", "description": f"{r.kind}Spec", "properties": _fields(SPEC[r.kind])}
    return {"type": "object", "description": f"{r.kind} (podtax kubesim, SIMULATED): known field names only",
            "properties": props,
            "x-kubernetes-group-version-kind": [{"group": r.group, "version": r.version, "kind": r.kind}]}


def group_version_doc(group: str, version: str) -> Obj:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for r in R.RESOURCES:
        if r.group != group or r.version != version:
            continue
        base = "/" + _gv_path(group, version) + ("/namespaces/{namespace}" if r.namespaced else "") + f"/{r.plural}"
        paths[base] = {"get": _operation(r, "list", "list"), "post": _operation(r, "post", "create")}
        paths[base + "/{name}"] = {"get": _operation(r, "get", "read"), "put": _operation(r, "put", "replace"),
                                   "patch": _operation(r, "patch", "patch"),
                                   "delete": _operation(r, "delete", "delete")}
        schemas[_schema_name(r)] = _schema(r)
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (podtax kubesim, SIMULATED)", "version": KUBE_VERSION},
            "paths": paths, "components": {"schemas": schemas}}


def _versions() -> list[tuple[str, str]]:
    return sorted({(r.group, r.version) for r in R.RESOURCES})


def _hash(doc: Obj) -> str:
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()


def serve(parts: list[str]) -> Obj:
    """GET /openapi/v3 (the index) and /openapi/v3/<api/v1 | apis/group/version>."""
    if parts[:1] != ["v3"]:
        raise ApiError(404, "NotFound", "the server could not find the requested resource "
                       "(kubesim serves OpenAPI v3 only)")
    if len(parts) == 1:
        index = {}
        for group, version in _versions():
            path = _gv_path(group, version)
            index[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={_hash(group_version_doc(group, version))}"}
        return {"paths": index}
    wanted = "/".join(parts[1:])
    for group, version in _versions():
        if _gv_path(group, version) == wanted:
            return group_version_doc(group, version)
    raise ApiError(404, "NotFound", "the server could not find the requested resource")


def unknown_fields(kind: str, body: Obj) -> list[str]:
    """Fields of `body` the API does not know, as dotted paths (ObjectMeta, top level, first spec level)."""
    if kind not in TOP or not isinstance(body, dict):
        return []
    out = [key for key in body if key not in COMMON and key not in TOP[kind]]
    meta = body.get("metadata")
    if isinstance(meta, dict):
        out += [f"metadata.{key}" for key in meta if key not in OBJECT_META]
    spec = body.get("spec")
    if kind in SPEC and isinstance(spec, dict):
        out += [f"spec.{key}" for key in spec if key not in SPEC[kind]]
    return out


def check_fields(res: R.Resource, body: Obj, directive: str) -> str | None:
    """Apply `?fieldValidation=`: raise 400 under Strict; return a warning text under Warn; None otherwise."""
    mode = (directive or "").lower()
    if mode not in ("strict", "warn"):
        return None
    unknown = unknown_fields(res.kind, body)
    if not unknown:
        return None
    if mode == "strict":
        detail = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise ApiError(400, "BadRequest", f'{res.kind} in version "{res.version}" cannot be handled as a '
                       f"{res.kind}: strict decoding error: {detail}")
    return "; ".join(f'unknown field "{u}"' for u in unknown)
