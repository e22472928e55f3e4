"""batch/v1 Job controller: creates pods from the template (job-name / controller-uid labels, an
owner reference), keeps `parallelism` pods active until `completions` succeeded, fails the job
after `backoffLimit` failed pods or `activeDeadlineSeconds`, sets the Complete/Failed conditions
and deletes finished jobs after ttlSecondsAfterFinished. Indexed completion mode, pod failure
policies and suspend are not simulated (suspend only stops new pods)."""

from __future__ import annotations

import asyncio
import copy
import time

from podtax_kubesim import resources as R
from podtax_kubesim.api import Api
from podtax_kubesim.store import Event
from podtax_kubesim.util import ApiError, Obj, deepcopy, now, parse_time
from podtax_kubesim.workqueue import WorkQueue

UID_LABEL = "batch.kubernetes.io/controller-uid"


class JobController:
    def __init__(self, api: Api) -> None:
        self.api, self.store = api, api.store
        self.pods: dict[str, set[str]] = {}  # job uid -> pod names
        self.counted: dict[str, dict[str, str]] = {}  # job uid -> pod uid -> phase it was counted as
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue(self._handle)
        self.ttl_timers: dict[str, asyncio.TimerHandle] = {}
        self.store.listen(R.JOBS, self._on_job)
        self.store.listen(R.PODS, self._on_pod)

    def _on_job(self, ev: Event) -> None:
        meta = ev.obj["metadata"]
        if ev.type == "DELETED":
            self.pods.pop(meta["uid"], None)
            self.counted.pop(meta["uid"], None)
            timer = self.ttl_timers.pop(meta["uid"], None)
            if timer:
                timer.cancel()
            return
        self.queue.add((meta["namespace"], meta["name"]))

    def _on_pod(self, ev: Event) -> None:
        labels = ev.obj["metadata"].get("labels") or {}
        uid = labels.get(UID_LABEL)
        if not uid:
            return
        name = ev.obj["metadata"]["name"]
        if ev.type == "DELETED":
            self.pods.get(uid, set()).discard(name)
        else:
            self.pods.setdefault(uid, set()).add(name)
        job = labels.get("batch.kubernetes.io/job-name") or labels.get("job-name")
        if job:
            self.queue.add((ev.obj["metadata"]["namespace"], job))

    def _handle(self, key: tuple[str, str]) -> None:
        job = self.store.get(R.JOBS, *key)
        if job is not None and not job["metadata"].get("deletionTimestamp"):
            self.reconcile(job)

    @staticmethod
    def finished(job: Obj) -> str:
        for cond in job.get("status", {}).get("conditions") or []:
            if cond["type"] in ("Complete", "Failed") and cond["status"] == "True":
                return cond["type"]
        return ""

    def reconcile(self, job: Obj) -> None:
        meta, spec = job["metadata"], job["spec"]
        uid, ns = meta["uid"], meta["namespace"]
        if self.finished(job):
            self._arm_ttl(job)
            return
        counted = self.counted.setdefault(uid, {})
        active: list[Obj] = []
        for name in sorted(self.pods.get(uid, set())):
            pod = self.store.get(R.PODS, ns, name)
            if pod is None:
                continue
            phase = pod["status"].get("phase")
            if phase in ("Succeeded", "Failed"):
                counted.setdefault(pod["metadata"]["uid"], phase)
            elif not pod["metadata"].get("deletionTimestamp"):
                active.append(pod)
        succeeded = sum(1 for p in counted.values() if p == "Succeeded")
        failed = sum(1 for p in counted.values() if p == "Failed")
        completions, parallelism = spec.get("completions") or 1, spec.get("parallelism", 1)
        status = copy.deepcopy(job.get("status") or {})
        status.setdefault("startTime", now())
        verdict, reason, message = "", "", ""
        if succeeded >= completions:
            verdict, reason, message = "Complete", "", ""
        elif failed > spec.get("backoffLimit", 6):
            verdict, reason, message = "Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        elif spec.get("activeDeadlineSeconds") is not None:
            started = parse_time(status["startTime"])
            deadline = (started.timestamp() if started else time.time()) + float(spec["activeDeadlineSeconds"])
            if time.time() >= deadline:
                verdict, reason, message = "Failed", "DeadlineExceeded", "Job was active longer than specified deadline"
            else:
                asyncio.get_running_loop().call_later(deadline - time.time() + 0.05, self.queue.add,
                                                      (ns, meta["name"]))
        created: list[str] = []
        if verdict == "Failed":
            for pod in active:
                self.api.delete(R.POD, ns, pod["metadata"]["name"], {})
            active = []
        elif not verdict and not spec.get("suspend"):
            want = min(parallelism, completions - succeeded) - len(active)
            for _ in range(max(want, 0)):
                try:
                    pod = self._create_pod(job)
                except ApiError as exc:  # e.g. refused by pod security admission, as in a real cluster
                    self.api.record_event(job, "FailedCreate", f"Error creating: {exc.message}", "Warning")
                    break
                created.append(pod["metadata"]["name"])
                active.append(pod)
        status.update({"active": len(active), "succeeded": succeeded, "failed": failed, "terminating": 0,
                       "ready": sum(1 for p in active if _ready(p)), "uncountedTerminatedPods": {}})
        for key in ("active", "succeeded", "failed"):
            if not status[key]:
                status.pop(key)
        if verdict:
            ts = now()
            cond = {"type": verdict, "status": "True", "lastProbeTime": ts, "lastTransitionTime": ts}
            if reason:
                cond.update(reason=reason, message=message)
            status.setdefault("conditions", []).append(cond)
            if verdict == "Complete":
                status["completionTime"] = ts
        new = deepcopy(job)
        new["status"] = status
        if new != job:
            updated = self.store.update(R.JOBS, new)
            for name in created:
                self.api.record_event(updated, "SuccessfulCreate", f"Created pod: {name}", component="job-controller")
            if verdict == "Complete":
                self.api.record_event(updated, "Completed", "Job completed", component="job-controller")
            elif verdict:
                self.api.record_event(updated, reason, message, "Warning", component="job-controller")
            if verdict:
                self._arm_ttl(updated)

    def _create_pod(self, job: Obj) -> Obj:
        template = copy.deepcopy(job["spec"]["template"])
        meta = template.setdefault("metadata", {})
        meta.pop("name", None)
        meta["generateName"] = f"{job['metadata']['name']}-"
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"],
                                    "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec", {})}
        return self.api.create(R.POD, job["metadata"]["namespace"], body)

    def _arm_ttl(self, job: Obj) -> None:
        ttl = job["spec"].get("ttlSecondsAfterFinished")
        uid = job["metadata"]["uid"]
        if ttl is None or uid in self.ttl_timers:
            return
        key = (job["metadata"]["namespace"], job["metadata"]["name"])
        self.ttl_timers[uid] = asyncio.get_running_loop().call_later(float(ttl), self._expire, key, uid)

    def _expire(self, key: tuple[str, str], uid: str) -> None:
        self.ttl_timers.pop(uid, None)
        job = self.store.get(R.JOBS, *key)
        if job is not None and job["metadata"]["uid"] == uid:
            self.api.delete(R.JOB, key[0], key[1],
                            {"propagationPolicy": "Background"})


def _ready(pod: Obj) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])

