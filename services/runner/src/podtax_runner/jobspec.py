"""The Job of one pod run, as pure functions: its name, its manifest (pinned to the node, no shell, one opted-in
host device at most) and whether a Job found under its name is this run's."""

from __future__ import annotations

import hashlib
from typing import Any

from podtax import events, netbench, templates
from podtax.campaign import DEVICES_NEEDED, PodSpec

WORKDIR = "/work"


def job_name(run_id: str) -> str:
    return "podtax-" + hashlib.sha1(run_id.encode()).hexdigest()[:20]


SUBMITTED = "podtax.io/submitted"  # when the run's campaign was submitted: tells this submission's Job from another's


def run_device(run: events.RunSpec, pod: PodSpec) -> str | None:
    """The host block device this run reads, when the campaign opted it in (pod.privileged_devices)."""
    param = DEVICES_NEEDED.get(run.test)
    device = str(run.params.get(param, "")) if param else ""
    return device if device and device in pod.privileged_devices else None


def device_access(device: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(volume, volumeMount, securityContext) that give a container exactly one host block device.

    A container cannot open a host device through a hostPath alone: the runtime's device cgroup
    denies it unless the container is privileged (or a device plugin grants it), and hdparm's
    ioctls need CAP_SYS_RAWIO as root. So: privileged, as root, with only that device mounted."""
    volume = {"name": "device", "hostPath": {"path": device, "type": "BlockDevice"}}
    mount = {"name": "device", "mountPath": device, "readOnly": True}
    security = {"privileged": True, "runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False,
                "capabilities": {"add": ["SYS_RAWIO"]}}
    return volume, mount, security


def job_manifest(run: events.RunSpec, pod: PodSpec, namespace: str, submitted: str | None = None) -> dict[str, Any]:
    """The Job of one pod run: backoffLimit 0, TTL after finish, pinned to the node, no shell; a
    privileged container with exactly one device only for a run that reads an opted-in device."""
    argv = templates.get(run.test).build_argv(run.params, WORKDIR)
    name = job_name(run.run_id)
    labels = {"app.kubernetes.io/managed-by": "podtax", "app.kubernetes.io/name": "podtax-bench",
              "podtax.io/campaign": run.campaign[:63], "podtax.io/run": name.removeprefix("podtax-")}
    if run.test in netbench.NET_TESTS:  # the NetworkPolicies let a network test's client reach its server
        labels[netbench.ROLE_LABEL] = "client"
    annotations = {"podtax.io/run-id": run.run_id, "podtax.io/test": run.test}
    if submitted:
        annotations[SUBMITTED] = submitted
    resources = {k: v for k, v in (("requests", pod.requests), ("limits", pod.limits)) if v}
    volumes: list[dict[str, Any]] = [{"name": "work", "emptyDir": {}}]
    mounts: list[dict[str, Any]] = [{"name": "work", "mountPath": WORKDIR}]
    container_extra: dict[str, Any] = {}
    device = run_device(run, pod)
    if device:
        volume, mount, security = device_access(device)
        volumes.append(volume)
        mounts.append(mount)
        container_extra["securityContext"] = security
        annotations["podtax.io/privileged-device"] = device
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations},
        "spec": {
            "backoffLimit": 0, "ttlSecondsAfterFinished": 600, "activeDeadlineSeconds": int(run.timeout_s),
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"kubernetes.io/hostname": run.node},
                    "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
                    "automountServiceAccountToken": False,
                    "containers": [{
                        "name": "bench", "image": pod.image, "command": ["podtax-bench", *argv],
                        "workingDir": WORKDIR, "resources": resources,
                        "env": [{"name": "PODTAX_RUN_ID", "value": run.run_id}],
                        "volumeMounts": mounts, **container_extra,
                    }],
                    "volumes": volumes,
                },
            },
        },
    }


def same_run(have: dict[str, str] | None, manifest: dict[str, Any]) -> bool:
    """An existing Job of the run's name (`have`: its annotations) is this run's, made before a runner restart:
    the same run id and campaign submission (a Job of a runner that did not record the submission: the run id)."""
    want = manifest["metadata"]["annotations"]
    have = have or {}
    return have.get("podtax.io/run-id") == want["podtax.io/run-id"] and have.get(SUBMITTED, want.get(SUBMITTED)) \
        == want.get(SUBMITTED)
