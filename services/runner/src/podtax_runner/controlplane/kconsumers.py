"""volume-churn's consumer pods (`consumer: true`): their manifest, and their deletion before the claims'.

A claim a pod names is held by kubernetes.io/pvc-protection until the pod is gone (the kubelet stopped it and
unmounted the volume: seconds on a real cluster). Claims deleted as soon as their pods' DELETE was answered timed that
shutdown in `deleted` and `pv_deleted`, which a run without consumers (or Nomad's) does not hold. So the run deletes
the pods, waits for them to be gone (the pod watch's DELETED, or a poll's 404), then deletes the claims. A pod that
does not go within the wait is logged and its claim deleted all the same (its `deleted` then holds the rest)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection

from kubernetes.client.rest import ApiException

from podtax_runner.controlplane.apierrors import CALL_ERRORS
from podtax_runner.controlplane.common import GIVE_UP_FLOOR_S, WAIT_STEP_S, Context, pool
from podtax_runner.controlplane.kubeapi import Kube, Obj

log = logging.getLogger("podtax.runner.controlplane")
PAUSE = "registry.k8s.io/pause:3.9"


def consumer_manifest(ctx: Context, name: str, claim: str, image: str = PAUSE) -> Obj:
    """A pod that mounts `claim`, pinned to the run's node; it runs until deleted."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": ctx.labels(),
                         "annotations": {"podtax.io/sim-duration-seconds": "inf"}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": ctx.run.node},
                     "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
                     "terminationGracePeriodSeconds": 1, "automountServiceAccountToken": False,
                     "restartPolicy": "Always",
                     "containers": [{"name": "consumer", "image": image,
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}}


def delete(ctx: Context, kube: Kube, ns: str, pods: Collection[str], workers: int, gone: set[str],
           failed: Callable[[str, Exception], None]) -> set[str]:
    """Delete `pods`, then wait until each is in `gone` (the caller's pod watch or poll rounds fill it; a 404 here
    too), at most max(stall window, GIVE_UP_FLOOR_S), leaving the run's last stall window for the claims.
    Returns the pods still there (logged). A delete that fails after its retries goes to `failed(pod, error)`: the
    caller fails the pod's claim with it as a claim's own delete failing does (ObjectChurn._error: counted toward
    the max(10, 10 %) abort; RBAC's 403 or a 401 ends the run as a refused delete, `call` delete, which execute.keep
    marks deletes_refused: review r11). A 500 answered three times ended the whole run (review r14's question), a
    claim's only its object."""
    failures: set[str] = set()

    def one(pod: str) -> None:
        try:
            kube.call("delete", kube.core.delete_namespaced_pod, pod, ns)
        except CALL_ERRORS as exc:
            if isinstance(exc, ApiException) and exc.status == 404:
                gone.add(pod)
            else:
                failures.add(pod)
                failed(pod, exc)

    pool(ctx, one, list(pods), workers)
    end = time.monotonic() + min(max(ctx.stall_s, GIVE_UP_FLOOR_S), max(0.0, ctx.remaining() - ctx.stall_s))
    while (left := set(pods) - gone - failures) and time.monotonic() < end:
        ctx.check()
        time.sleep(WAIT_STEP_S)
    if left:
        log.warning("run %s: %d consumer pod(s) not gone after their delete (first: %s); their claims are deleted "
                    "all the same, their `deleted` holding the wait", ctx.run.run_id, len(left), sorted(left)[0])
    return left
