"""API semantics independent of HTTP: create, replace, patch, delete (with grace and finalizers),
the pod binding subresource, and Events for controllers."""

from __future__ import annotations

import time
from typing import Any

from podtax_kubesim import admission, defaults, patching, storageadmission, util
from podtax_kubesim import resources as R
from podtax_kubesim.resources import Resource
from podtax_kubesim.store import Store
from podtax_kubesim.util import ApiError, Obj, conflict, deepcopy, invalid, new_uid, not_found, now, random_suffix

WITH_STATUS = {"Pod", "Job", "PersistentVolumeClaim", "PersistentVolume", "Node", "Namespace"}
POD_MUTABLE_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")


class Api:
    def __init__(self, store: Store, allow_privileged: bool = False) -> None:
        self.store, self.allow_privileged = store, allow_privileged
        self._event_ns = 0  # the last event's name stamp (record_event)

    # --- helpers -----------------------------------------------------------
    def _stored(self, res: Resource, ns: str, name: str) -> Obj:
        obj = self.store.get(res.store_key, ns if res.namespaced else "", name)
        if obj is None:
            raise not_found(res.plural, name, res.group)
        return obj

    def _in(self, res: Resource, body: Obj) -> Obj:
        return defaults.event_from_v1(body) if res.storage else body

    def out(self, res: Resource, obj: Obj) -> Obj:
        return defaults.event_to_v1(obj) if res.storage else obj

    def _check_namespace(self, res: Resource, ns: str) -> None:
        if res.namespaced and self.store.get(R.NAMESPACES, "", ns) is None:
            raise not_found("namespaces", ns)

    # --- create ------------------------------------------------------------
    def create(self, res: Resource, ns: str, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the request body must be a JSON object")
        obj = self._in(res, deepcopy(body))
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the "
                               "namespace sent on the request")
            meta["namespace"] = ns
            self._check_namespace(res, ns)
            admission.refuse_terminating(self.store.get(R.NAMESPACES, "", ns), res, meta.get("name", ""))
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + random_suffix()
        defaults.validate_name(res.kind, meta.get("name", ""))
        if res.kind == "Pod":
            admission.check_pod(obj, self.allow_privileged)
        for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "uid",
                    "creationTimestamp"):
            meta.pop(key, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now()
        owner = R.BY_KEY.get(res.store_key, res)
        obj["kind"], obj["apiVersion"] = owner.kind, owner.api_version
        if "spec" in obj or res.kind in ("Job", "Pod"):
            meta["generation"] = 1
        fn = defaults.BY_KIND.get(res.kind)
        if fn:
            fn(obj)
        if res.kind == "PersistentVolumeClaim":
            storageadmission.admit_claim(obj, self.store.items(R.STORAGECLASSES))
        elif res.kind == "PersistentVolume":
            storageadmission.admit_volume(obj)
        return self.store.create(res.store_key, obj)

    # --- replace -----------------------------------------------------------
    def replace(self, res: Resource, ns: str, name: str, body: Any, sub: str = "") -> Obj:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the request body must be a JSON object")
        body = self._in(res, deepcopy(body))
        meta = body.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise ApiError(400, "BadRequest", f"the name of the object ({meta.get('name')}) does not match "
                           f"the name on the URL ({name})")
        old = self.store.get(res.store_key, ns if res.namespaced else "", name)
        if old is None:
            if res.kind in ("Lease", "Event") and not sub:  # AllowCreateOnUpdate, as in the apiserver
                return self.create(res, ns, body)
            raise not_found(res.plural, name, res.group)
        expect = meta.get("resourceVersion") or None
        if expect and expect != old["metadata"]["resourceVersion"]:
            raise conflict(res.plural, name, "the object has been modified; please apply your changes to "
                           "the latest version and try again", res.group)
        if sub == "status":
            new = deepcopy(old)
            new["status"] = body.get("status", {})
        elif sub == "finalize":  # a namespace's spec.finalizers, changed only here (the namespace controller's way)
            new = deepcopy(old)
            new["spec"] = {**(old.get("spec") or {}), "finalizers": (body.get("spec") or {}).get("finalizers") or []}
        else:
            new = body
            new["kind"], new["apiVersion"] = old["kind"], old["apiVersion"]
            new["metadata"] = self._merge_meta(old["metadata"], meta)
            if res.kind in WITH_STATUS:
                new["status"] = deepcopy(old.get("status", {}))
            if res.kind == "Pod":
                self._check_pod_spec(old, new)
            if res.kind == "Namespace":  # its spec.finalizers change through `finalize` only
                new["spec"] = {**(new.get("spec") or {}), "finalizers": (old.get("spec") or {}).get("finalizers", [])}
            if "spec" in old and new.get("spec") != old.get("spec"):
                new["metadata"]["generation"] = int(old["metadata"].get("generation", 1)) + 1
        return self.commit_update(res, new, expect)

    @staticmethod
    def _merge_meta(old: Obj, new: Obj) -> Obj:
        meta = dict(new)
        for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                    "generation", "namespace", "name"):
            if key in old:
                meta[key] = old[key]
            else:
                meta.pop(key, None)
        return meta

    @staticmethod
    def _check_pod_spec(old: Obj, new: Obj) -> None:
        gates = [g.get("name") for g in (new.get("spec") or {}).get("schedulingGates") or ()]
        had = [g.get("name") for g in old.get("spec", {}).get("schedulingGates") or ()]
        if added := [g for g in gates if g not in had]:  # gates may only be removed
            raise invalid("Pod", old["metadata"]["name"], f"spec.schedulingGates: Forbidden: only deletion is "
                          f"allowed, but found new scheduling gate '{added[0]}'")

        def strip(spec: Obj) -> Obj:
            out = {k: v for k, v in spec.items() if k not in (*POD_MUTABLE_SPEC, "schedulingGates")}
            out["containers"] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get("containers", [])]
            return out

        if strip(old.get("spec", {})) != strip(new.get("spec") or {}):
            raise invalid("Pod", old["metadata"]["name"], "spec: Forbidden: pod updates may not change fields "
                          "other than `spec.containers[*].image`, `spec.activeDeadlineSeconds`, "
                          "`spec.tolerations` (only additions to existing tolerations), "
                          "`spec.terminationGracePeriodSeconds`")

    def commit_update(self, res: Resource, new: Obj, expect: str | None = None) -> Obj:
        meta = new["metadata"]
        if (meta.get("deletionTimestamp") and not meta.get("finalizers") and not self._waits_for_kubelet(new)
                and not (new.get("kind") == "Namespace" and (new.get("spec") or {}).get("finalizers"))):
            stored = self.store.get(res.store_key, meta.get("namespace", ""), meta["name"])
            if stored is not None and stored["metadata"].get("finalizers"):
                # the last finalizer removed: the update is not written, the object is deleted (one DELETED
                # event, as the real registry's errEmptiedFinalizers path does)
                return self.store.delete(res.store_key, meta.get("namespace", ""), meta["name"])
            self.store.update(res.store_key, new, expect)
            return self.store.delete(res.store_key, meta.get("namespace", ""), meta["name"])
        return self.store.update(res.store_key, new, expect)

    # --- patch -------------------------------------------------------------
    def patch(self, res: Resource, ns: str, name: str, body: Any, content_type: str, sub: str = "") -> Obj:
        old = self._stored(res, ns, name)
        doc = self.out(res, old)
        patched = patching.apply(doc, body, content_type)
        if not isinstance(patched, dict):
            raise ApiError(422, "Invalid", "the patch did not produce an object")
        expect = patched.get("metadata", {}).get("resourceVersion")
        patched.setdefault("metadata", {})["resourceVersion"] = expect
        return self.replace(res, ns, name, patched, sub)

    # --- delete ------------------------------------------------------------
    def delete(self, res: Resource, ns: str, name: str, options: Obj) -> Obj:
        old = self._stored(res, ns, name)
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
            raise conflict(res.plural, name, f"Precondition failed: UID in precondition: {pre['uid']}, UID in "
                           f"object meta: {old['metadata']['uid']}", res.group)
        if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise conflict(res.plural, name, "the object has been modified", res.group)
        key, ns = res.store_key, ns if res.namespaced else ""
        # a namespace's first DELETE always makes it Terminating (the namespace controller empties it while
        # spec.finalizers hold it: namespaces.py); a DELETE of one Terminating answers it as it is (200: 1.30's
        # namespace storage; older API servers answered 409), unless no finalizer is left (emptied through `finalize`
        # before the DELETE: the controller leaves it alone): then it goes, its objects left behind as on a cluster
        held = res.kind == "Namespace" and (not old["metadata"].get("deletionTimestamp")
                                            or bool((old.get("spec") or {}).get("finalizers")))
        if res.kind == "Job":
            self._delete_dependents(old, options.get("propagationPolicy") or "Orphan")
        grace = options.get("gracePeriodSeconds")
        if res.kind == "Pod" and grace is None:
            grace = old["spec"].get("terminationGracePeriodSeconds", 30)
        waits = res.kind == "Pod" and self._waits_for_kubelet(old) and (grace or 0) > 0
        if waits or held or old["metadata"].get("finalizers"):
            if old["metadata"].get("deletionTimestamp"):
                return self.out(res, old)
            new = deepcopy(old)
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = int(grace or 0)
            if res.kind == "Namespace":  # Terminating, refusing new content meanwhile, until the namespace
                # controller has emptied it and removed `kubernetes` (namespaces.py)
                new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
            return self.out(res, self.store.update(key, new))
        return self.out(res, self.store.delete(key, ns, name))

    def _waits_for_kubelet(self, pod: Obj) -> bool:
        """A bound, running pod is removed by its node's kubelet once it has stopped the containers."""
        if pod.get("kind") != "Pod" or not pod["spec"].get("nodeName"):
            return False
        if pod["status"].get("phase") in ("Succeeded", "Failed"):
            return False
        return self.store.get(R.NODES, "", pod["spec"]["nodeName"]) is not None

    def force_delete(self, key: str, ns: str, name: str) -> None:
        if self.store.get(key, ns, name) is not None:
            self.store.delete(key, ns, name)

    def _delete_dependents(self, owner: Obj, policy: str) -> None:
        uid, ns = owner["metadata"]["uid"], owner["metadata"]["namespace"]
        pods = [p for p in self.store.items(R.PODS, ns)
                if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])]
        for pod in pods:
            if policy == "Orphan":
                new = deepcopy(pod)
                new["metadata"]["ownerReferences"] = [r for r in new["metadata"]["ownerReferences"]
                                                      if r.get("uid") != uid]
                self.store.update(R.PODS, new)
            else:
                self.delete(R.POD, ns, pod["metadata"]["name"], {})

    # --- subresources ------------------------------------------------------
    def bind(self, ns: str, name: str, body: Any) -> Obj:
        if not isinstance(body, dict) or not (body.get("target") or {}).get("name"):
            raise invalid("Binding", name, "target.name: Required value")
        pod = self.store.get(R.PODS, ns, name)
        if pod is None:
            raise not_found("pods", name)
        want_uid = (body.get("metadata") or {}).get("uid")
        if want_uid and want_uid != pod["metadata"]["uid"]:
            raise conflict("pods/binding", name, f"Precondition failed: UID in precondition: {want_uid}, "
                           f"UID in object meta: {pod['metadata']['uid']}")
        if pod["metadata"].get("deletionTimestamp"):
            raise conflict("pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host")
        if pod["spec"].get("nodeName"):
            raise conflict("pods/binding", name,
                           f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"')
        if pod["spec"].get("schedulingGates"):  # not ready for scheduling (the gates' owner removes them)
            raise conflict("pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates")
        self.assign(pod, body["target"]["name"], (body.get("metadata") or {}).get("annotations"))
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def assign(self, pod: Obj, node: str, annotations: dict[str, str] | None = None) -> Obj:
        new = deepcopy(pod)
        new["spec"]["nodeName"] = node
        if annotations:
            new["metadata"].setdefault("annotations", {}).update(annotations)
        set_condition(new["status"], "PodScheduled", "True")
        return self.store.update(R.PODS, new)

    # --- events for controllers -------------------------------------------
    def record_event(self, obj: Obj, reason: str, message: str, etype: str = "Normal",
                     component: str = "kubesim", action: str | None = None, repeat: bool = False) -> None:
        """An Event about `obj`, named as client-go's recorders name one: the object's name, then the time in hex
        nanoseconds (kube-burner's podLatency reads a Started event's time from it); with an `action`, as the
        events.k8s.io recorder (the scheduler's) writes one: eventTime in microseconds (kube-burner's PodScheduled).
        `repeat`: an event like one already recorded about `obj` (its type, reason, message and component) counts that
        one up instead, count + 1 and lastTimestamp now, as client-go's EventCorrelator patches a repeated event."""
        meta = obj["metadata"]
        ns = meta.get("namespace") or "default"
        if self.store.get(R.NAMESPACES, "", ns) is None:
            return
        ts = now()
        same = next((e for e in self.store.items(R.EVENTS, ns) if repeat and e.get("reason") == reason
                     and e.get("message") == message and e.get("type") == etype
                     and (e.get("source") or {}).get("component") == component
                     and (e.get("involvedObject") or {}).get("uid") == meta.get("uid")), None)
        if same is not None:
            self.store.update(R.EVENTS, {**deepcopy(same), "count": (same.get("count") or 1) + 1, "lastTimestamp": ts})
            return
        self._event_ns = max(time.time_ns(), self._event_ns + 1)
        self.store.create(R.EVENTS, {
            **({"eventTime": util.now_micro(), "reportingController": component, "action": action} if action else {}),
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": f"{meta['name']}.{self._event_ns:x}", "namespace": ns},
            "involvedObject": {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"), "name": meta["name"],
                               "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                               "resourceVersion": meta.get("resourceVersion")},
            "reason": reason, "message": message, "type": etype, "count": 1, "firstTimestamp": ts,
            "lastTimestamp": ts, "source": {"component": component}, "reportingComponent": component,
            "reportingInstance": component})


def set_condition(pod_status: Obj, ctype: str, value: str, reason: str | None = None,
                  message: str | None = None) -> None:
    conditions = pod_status.setdefault("conditions", [])
    for cond in conditions:
        if cond["type"] == ctype:
            if cond["status"] != value:
                cond["lastTransitionTime"] = now()
            cond["status"] = value
            break
    else:
        cond = {"type": ctype, "status": value, "lastProbeTime": None, "lastTransitionTime": now()}
        conditions.append(cond)
    for key, val in (("reason", reason), ("message", message)):
        if val:
            cond[key] = val
        else:
            cond.pop(key, None)
