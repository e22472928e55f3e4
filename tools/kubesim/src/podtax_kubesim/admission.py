"""Pod security admission, like the "baseline" Pod Security Standard a real cluster enforces:
pods that ask for the host (hostPath volumes, privileged containers, host namespaces) are refused
with 403 Forbidden unless the emulator was started with allow_privileged (CLI: --allow-privileged).
In exec mode these pods would otherwise run as root on this machine with its filesystem.
Also NamespaceLifecycle's refusal of new content in a namespace being deleted (refuse_terminating)."""

from __future__ import annotations

from podtax_kubesim.resources import Resource
from podtax_kubesim.util import ApiError, Obj

LEVEL = 'baseline:latest'


def _containers(spec: Obj) -> list[Obj]:
    return [c for key in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(key) or [] if isinstance(c, dict)]


def violations(pod: Obj) -> list[str]:
    """What in a pod breaks the baseline policy, in the words of the real PodSecurity admission."""
    spec = pod.get("spec") or {}
    out = []
    hosts = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    if hosts:
        out.append(f"host namespaces ({', '.join(hosts)})")
    privileged = [c.get("name", "") for c in _containers(spec) if (c.get("securityContext") or {}).get("privileged")]
    if privileged:
        names = ", ".join(f'"{n}"' for n in privileged)
        out.append(f"privileged (container{'s' if len(privileged) > 1 else ''} {names} must not set "
                   "securityContext.privileged=true)")
    paths = [v.get("name", "") for v in spec.get("volumes") or [] if isinstance(v, dict) and "hostPath" in v]
    if paths:
        out.append(f"hostPath volumes ({', '.join(repr(p).replace(chr(39), chr(34)) for p in paths)})")
    return out


def check_pod(pod: Obj, allow_privileged: bool) -> None:
    """Raise 403 Forbidden (a Status body like the apiserver's) when the pod is not allowed."""
    if allow_privileged:
        return
    found = violations(pod)
    if found:
        name = (pod.get("metadata") or {}).get("name") or (pod.get("metadata") or {}).get("generateName", "")
        raise ApiError(403, "Forbidden", f'pods "{name}" is forbidden: violates PodSecurity "{LEVEL}": '
                       + ", ".join(found) + " (start kubesim with --allow-privileged to allow it)",
                       {"name": name, "kind": "pods"})


def refuse_terminating(namespace: Obj | None, res: Resource, name: str) -> None:
    """NamespaceLifecycle: a create in a namespace being deleted (phase Terminating: its DELETE came while finalizers
    hold it) is refused 403 Forbidden with the cause NamespaceTerminating, worded as apiserver's
    plugin/pkg/admission/namespace/lifecycle (admission.NewForbidden)."""
    if namespace is None or (namespace.get("status") or {}).get("phase") != "Terminating":
        return
    ns = namespace["metadata"]["name"]
    qualified = f"{res.plural}.{res.group}" if res.group else res.plural
    subject = f'{qualified} "{name}"' if name else qualified
    raise ApiError(403, "Forbidden", f"{subject} is forbidden: unable to create new content in namespace {ns} "
                   f"because it is being terminated",
                   {"name": name, "group": res.group, "kind": res.plural,
                    "causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                "message": f"namespace {ns} is being terminated"}]})
