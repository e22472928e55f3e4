"""The namespace controller (kube-controller-manager's namespace lifecycle): a namespace deleted is held in phase
Terminating (its deletionTimestamp set) by its `spec.finalizers` (`kubernetes`, put there at its create) while its
objects are deleted as any DELETE deletes them (a pod's grace period, a claim's pvc-protection finalizer); once none
is left, `kubernetes` is removed from `spec.finalizers` (the `finalize` subresource, Api.replace) and it goes, unless
`metadata.finalizers` still hold it (then at their last one's removal). Meanwhile NamespaceLifecycle refuses a create
in it 403 (admission.refuse_terminating). Before, kubesim deleted the namespace and its objects at once, finalizers
and grace periods ignored, and a create right after the DELETE was answered 404."""

from __future__ import annotations

from collections import Counter

from podtax_kubesim import resources as R
from podtax_kubesim.api import Api
from podtax_kubesim.store import Event
from podtax_kubesim.util import Obj, now
from podtax_kubesim.workqueue import WorkQueue

KUBERNETES = "kubernetes"  # the finalizer the namespace controller removes once the namespace is empty
CONTENT, FINALIZERS = "NamespaceContentRemaining", "NamespaceFinalizersRemaining"
DONE = {  # the conditions the namespace controller keeps on a namespace it empties: (reason, message) when False
    "NamespaceDeletionDiscoveryFailure": ("ResourcesDiscovered", "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": ("ParsedGroupVersions",
                                                    "All legacy kube types successfully parsed"),
    "NamespaceDeletionContentFailure": ("ContentDeleted",
                                        "All content successfully deleted, may be waiting on finalization"),
    CONTENT: ("ContentRemoved", "All content successfully removed"),
    FINALIZERS: ("ContentHasNoFinalizers", "All content-preserving finalizers finished"),
}


class NamespaceController:
    def __init__(self, api: Api) -> None:
        self.api, self.store = api, api.store
        self.queue: WorkQueue[str] = WorkQueue(self.reconcile)
        self.store.listen(R.NAMESPACES, self._on_namespace)
        for res in R.BY_KEY.values():
            if res.namespaced:
                self.store.listen(res.store_key, self._on_content)

    def _on_namespace(self, ev: Event) -> None:
        if ev.type != "DELETED" and ev.obj["metadata"].get("deletionTimestamp"):
            self.queue.add(ev.obj["metadata"]["name"])

    def _on_content(self, ev: Event) -> None:
        ns = ev.obj["metadata"].get("namespace", "")
        held = self.store.get(R.NAMESPACES, "", ns)
        if ev.type == "DELETED" and held is not None and held["metadata"].get("deletionTimestamp"):
            self.queue.add(ns)

    def reconcile(self, ns: str) -> None:
        """Delete what the terminating namespace `ns` holds, saying what remains in its status.conditions; finalize
        it once it holds nothing. One whose spec.finalizers were emptied before (`finalize`) is left alone."""
        namespace = self.store.get(R.NAMESPACES, "", ns)
        if namespace is None or not namespace["metadata"].get("deletionTimestamp"):
            return
        finalizers = (namespace.get("spec") or {}).get("finalizers") or []
        if not finalizers:  # already finalized: the controller returns at once (its objects stay)
            return
        contents = [r for r in R.BY_KEY.values() if r.namespaced]
        for res in contents:
            for obj in list(self.store.items(res.store_key, ns)):
                if not obj["metadata"].get("deletionTimestamp"):
                    self.api.delete(res, ns, obj["metadata"]["name"], {})
        remaining = {res: list(self.store.items(res.store_key, ns)) for res in contents}
        self._conditions(namespace, {res: objs for res, objs in remaining.items() if objs})
        if any(remaining.values()):
            return  # held by a grace period or a finalizer: finalized when the last goes (_on_content)
        if KUBERNETES in finalizers:  # gone with it unless other finalizers hold it (Api.commit_update)
            self.api.replace(R.NAMESPACE, "", ns, {"metadata": {"name": ns}, "spec": {
                "finalizers": [f for f in finalizers if f != KUBERNETES]}}, "finalize")

    def _conditions(self, namespace: Obj, remaining: dict[R.Resource, list[Obj]]) -> None:
        """The namespace controller's status.conditions after a pass (its status_condition_utils.go): the five it
        keeps, True with what remains or False with its 'all done' words; written only when one changed."""
        status = namespace.get("status") or {}
        old = {c.get("type"): c for c in status.get("conditions") or []}
        wanted = [(kind, "False", reason, message) for kind, (reason, message) in DONE.items()]
        if remaining:
            things = sorted(f"{res.plural}.{res.group} has {len(objs)} resource instances"
                            for res, objs in remaining.items())
            wanted[3] = (CONTENT, "True", "SomeResourcesRemain", f"Some resources are remaining: {', '.join(things)}")
            held = Counter(f for objs in remaining.values() for obj in objs for f in obj["metadata"].get("finalizers")
                           or [])
            if held:
                by = sorted(f"{f} in {n} resource instances" for f, n in held.items())
                wanted[4] = (FINALIZERS, "True", "SomeFinalizersRemain",
                             f"Some content in the namespace has finalizers remaining: {', '.join(by)}")
        conditions = [c for c in status.get("conditions") or [] if c.get("type") not in DONE]
        for kind, state, reason, message in wanted:
            was = old.get(kind) or {}
            since = was.get("lastTransitionTime") if was.get("status") == state else now()
            conditions.append({"type": kind, "status": state, "lastTransitionTime": since, "reason": reason,
                               "message": message})
        if [old.get(c["type"]) for c in conditions if c["type"] in DONE] == conditions[-len(DONE):]:
            return
        self.api.replace(R.NAMESPACE, "", namespace["metadata"]["name"], {
            "metadata": {"name": namespace["metadata"]["name"]}, "status": {**status, "conditions": conditions}},
            "status")
