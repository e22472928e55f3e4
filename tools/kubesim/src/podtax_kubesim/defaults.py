"""Server-side defaulting and minimal validation, per kind, as the real apiserver does it."""

from __future__ import annotations

import re

from podtax_kubesim.util import Obj, invalid, now, quantity

# the API server's name rules: a DNS-1123 subdomain, dot-separated parts each starting and ending with a letter or digit
# (a..b, a.-b refused), 253 characters at most; a Namespace's a DNS-1123 label (no dots: 'must not contain dots'), 63
# at most
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_SUBDOMAIN_RULE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                   "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
                   f"is '{_DNS_SUBDOMAIN}')")
_LABEL_RULE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
               "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
               f"'{_DNS_LABEL}')")
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
]


def validate_name(kind: str, name: str) -> None:
    """Refuse a name as the API server does: 422 with each rule it breaks (too long and malformed: both)."""
    if not name:
        raise invalid(kind, name, "metadata.name: Required value: name or generateName is required")
    most, regex, rule = (63, _DNS_LABEL, _LABEL_RULE) if kind == "Namespace" else (253, _DNS_SUBDOMAIN,
                                                                                     _SUBDOMAIN_RULE)
    broken = [f"must be no more than {most} characters"] if len(name) > most else []
    if not re.fullmatch(regex, name):  # a subdomain that is no label has dots (apimachinery's IsDNS1123Label)
        broken.append("must not contain dots" if regex == _DNS_LABEL and re.fullmatch(_DNS_SUBDOMAIN, name) else rule)
    said = [f'metadata.name: Invalid value: "{name}": {why}' for why in broken]
    if said:
        raise invalid(kind, name, said[0] if len(said) == 1 else f"[{', '.join(said)}]")


def qos_class(spec: Obj) -> str:
    """Guaranteed / Burstable / BestEffort, computed like Kubernetes (containers + init containers)."""
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if any(k in req or k in lim for k in ("cpu", "memory")):
            any_set = True
        for k in ("cpu", "memory"):
            if k not in lim or quantity(req.get(k, lim[k])) != quantity(lim[k]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _container(c: Obj) -> None:
    image = c.get("image", "")
    tag = image.rsplit("/", 1)[-1]
    c.setdefault("imagePullPolicy", "Always" if ":" not in tag or tag.endswith(":latest") else "IfNotPresent")
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    res = c.setdefault("resources", {})
    limits = res.get("limits") or {}
    if limits:  # requests default to limits
        req = res.setdefault("requests", {})
        for k, v in limits.items():
            req.setdefault(k, v)


def pod(obj: Obj) -> None:
    meta, spec = obj["metadata"], obj.setdefault("spec", {})
    if not spec.get("containers"):
        raise invalid("Pod", meta.get("name", ""), "spec.containers: Required value")
    for c in spec["containers"] + (spec.get("initContainers") or []):
        if not c.get("name"):
            raise invalid("Pod", meta.get("name", ""), "spec.containers[].name: Required value")
        _container(c)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    tolerations = spec.setdefault("tolerations", [])
    for t in DEFAULT_TOLERATIONS:
        if not any(x.get("key") == t["key"] for x in tolerations):
            tolerations.append(dict(t))
    obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


def job(obj: Obj) -> None:
    meta, spec = obj["metadata"], obj.setdefault("spec", {})
    template = spec.get("template") or {}
    tspec = template.get("spec") or {}
    if tspec.get("restartPolicy") not in ("Never", "OnFailure"):
        raise invalid("Job", meta.get("name", ""), "spec.template.spec.restartPolicy: Required value: "
                      'valid values: "OnFailure", "Never"')
    uid = meta["uid"]
    labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": meta["name"],
              "controller-uid": uid, "job-name": meta["name"]}
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = {**(tmeta.get("labels") or {}), **labels}
    spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("manualSelector", False)
    spec.setdefault("podReplacementPolicy", "TerminatedOrFailed")
    meta.setdefault("labels", {}).update({k: v for k, v in labels.items() if "job-name" in k or "uid" in k})
    obj["status"] = {}


def pvc(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("volumeMode", "Filesystem")
    obj["status"] = {"phase": "Pending"}


def pv(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    status = obj.setdefault("status", {})
    # a claimRef without a uid pre-binds the PV to a claim not bound yet: Available until the PV controller binds it
    status.setdefault("phase", "Available" if not (spec.get("claimRef") or {}).get("uid") else "Bound")
    status.setdefault("lastPhaseTransitionTime", now())  # set on create, like the API server since 1.29


def storageclass(obj: Obj) -> None:
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")


def namespace(obj: Obj) -> None:
    """At its create a namespace's spec.finalizers always gets `kubernetes` (the API server's namespace strategy):
    the namespace controller removes it once the namespace deleted is empty (namespaces.py)."""
    finalizers = (obj.setdefault("spec", {}) or {}).get("finalizers") or []
    obj["spec"] = {**(obj["spec"] or {}), "finalizers": finalizers + ["kubernetes"] * ("kubernetes" not in finalizers)}
    obj["status"] = {"phase": "Active"}
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]


def event(obj: Obj) -> None:
    obj.setdefault("firstTimestamp", obj.get("lastTimestamp") or (None if obj.get("eventTime") else now()))
    obj.setdefault("lastTimestamp", obj["firstTimestamp"])
    obj.setdefault("count", 1)
    obj.setdefault("type", "Normal")


BY_KIND = {"Pod": pod, "Job": job, "PersistentVolumeClaim": pvc, "PersistentVolume": pv,
           "StorageClass": storageclass, "Namespace": namespace, "Event": event}

_EV_RENAMES = [("involvedObject", "regarding"), ("message", "note"), ("source", "deprecatedSource"),
               ("firstTimestamp", "deprecatedFirstTimestamp"), ("lastTimestamp", "deprecatedLastTimestamp"),
               ("count", "deprecatedCount"), ("reportingComponent", "reportingController")]


def event_to_v1(core: Obj) -> Obj:
    """core/v1 Event -> events.k8s.io/v1 Event (both views of the same stored object)."""
    out = {k: v for k, v in core.items() if k not in dict(_EV_RENAMES)}
    for old, new in _EV_RENAMES:
        if core.get(old) is not None:
            out[new] = core[old]
    out["apiVersion"], out["kind"] = "events.k8s.io/v1", "Event"
    out.setdefault("eventTime", None)
    return out


def event_from_v1(ev: Obj) -> Obj:
    renames = {new: old for old, new in _EV_RENAMES}
    out = {renames.get(k, k): v for k, v in ev.items()}
    out["apiVersion"], out["kind"] = "v1", "Event"
    if not out.get("source") and ev.get("reportingController"):
        out["source"] = {"component": ev["reportingController"]}
    return out

