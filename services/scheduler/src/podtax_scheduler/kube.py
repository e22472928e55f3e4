"""Thin, fast access to the Kubernetes API with the official client.

Responses are read as raw JSON (``_preload_content=False``): it is several times faster than the
client's model deserialisation for large lists, and it sidesteps the client's Binding bug (it
raises ``ValueError: Invalid value for `target`, must not be `None``` after a successful bind).
Every raw response is read to its end and released (:func:`drain`): urllib3 returns a connection to
the pool only then, and an unread response makes the next request open a new TCP connection. The
writes skip the client's validation of their bodies (``podtax.kubeclient.unvalidated``), and its credential
refresh runs once a second, not on every request (:func:`api_client`, ``podtax.kubeclient``; the runner's
control-plane client does the same): together ~0.2 ms of CPU a request, of a bind's and
its Event's ~0.6 ms each.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException
from podtax.kubeclient import load_config, refresh_at_most_every, retry_after_s, status_message, unvalidated

log = logging.getLogger("podtax.scheduler.kube")
COMPONENT = "benchmark-scheduler"
RETRY_AFTER_S = (0.1, 60.0)  # a Retry-After is honoured within these bounds (a hostile 0 or a day is not)


_FIX = {401: "the API server refused the scheduler's credentials: check PODTAX_SCHEDULER_KUBECONFIG, or the pod's "
            "service account token",
        403: "the scheduler's service account lacks that permission: apply the ClusterRole in "
             "deploy/k8s/scheduler.yaml"}


class PodGone(Exception):
    """The API refused a bind because the pod is being deleted, or the pod of that name is no longer ours."""


def unreached(exc: BaseException) -> str:
    """A call that got no answer, in one line: for urllib3's MaxRetryError the API server's address and the error of
    its last attempt (not the URL and 'Max retries exceeded'), without the connection object's repr."""
    where = ""
    if isinstance(exc, urllib3.exceptions.MaxRetryError):
        pool = exc.pool
        where = f" at {pool.scheme}://{pool.host}:{pool.port}" if pool is not None else ""
        exc = exc.reason or exc
    text = str(exc)
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        text = text.split(": ", 1)[-1]  # '<HTTPSConnection object at 0x..>: Failed to establish ...'
    return f"the API server{where} did not answer: {type(exc).__name__}: {text}"


def api_problem(exc: BaseException) -> str:
    """An API error in one line that says what to fix: the status, the API's own message (its Status body),
    and for 401 and 403 what to check; not the client's dump of the response headers. The API not reached:
    :func:`unreached`; any other error: its type and text."""
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError):
        return unreached(exc)
    if not isinstance(exc, ApiException):
        return f"{type(exc).__name__}: {exc}"
    message = status_message(exc.body)
    text = f"HTTP {exc.status} {exc.reason}" + (f": {message}" if message and message != exc.reason else "")
    return f"{text} ({_FIX[exc.status]})" if exc.status in _FIX else text


def retry_after(exc: BaseException) -> float | None:
    """The seconds an API answer of 429 or 5xx asks to wait before trying again (podtax.kubeclient.retry_after_s, as
    client-go reads them), within RETRY_AFTER_S; None when it names none."""
    if not isinstance(exc, ApiException) or not (exc.status == 429 or (exc.status or 0) >= 500):
        return None
    seconds = retry_after_s(exc)
    return None if seconds is None else min(max(seconds, RETRY_AFTER_S[0]), RETRY_AFTER_S[1])


def api_client(kubeconfig: Path | None, pool: int = 16) -> client.ApiClient:
    """A client from a kubeconfig file, else in-cluster config, else ~/.kube/config."""
    cfg = client.Configuration()
    load_config(cfg, kubeconfig, "PODTAX_SCHEDULER_KUBECONFIG (or --kubeconfig)")
    cfg.connection_pool_maxsize = pool
    refresh_at_most_every(cfg)
    return client.ApiClient(cfg)


def drain(resp: Any) -> bytes:
    """Read a raw (``_preload_content=False``) response and give its connection back to the pool."""
    try:
        return resp.data
    finally:
        resp.release_conn()


def condition_message(message: str) -> str:
    """A condition's message as this scheduler writes it (its first 1,024 characters)."""
    return message[:1024]


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Kube:
    def __init__(self, api: client.ApiClient, identity: str = COMPONENT) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.identity = identity

    # ------------------------------------------------------------ list / watch

    def lister(self, kind: str):  # noqa: ANN201 - a bound client method
        """The client's list (and, with watch=True, watch) call of `kind`: "nodes", "pods" or "namespaces"."""
        return {"nodes": self.core.list_node, "pods": self.core.list_pod_for_all_namespaces,
                "namespaces": self.core.list_namespace}[kind]

    def list(self, kind: str, page: int = 2000) -> tuple[list[dict[str, Any]], str]:
        """Every object of `kind` ("nodes", "pods" or "namespaces"), paged; returns (items, resourceVersion)."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": page, "_preload_content": False, "_request_timeout": 60}
            if token:
                kwargs["_continue"] = token
            body = json.loads(drain(self.lister(kind)(**kwargs)))
            items.extend(body.get("items") or [])
            meta = body.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                return items, str(meta.get("resourceVersion", ""))

    # ------------------------------------------------------------ writes

    def bind(self, namespace: str, name: str, uid: str, node: str) -> bool:
        """Bind with the pod UID as precondition; False on 409 (someone else bound it), True on a 409 that says it
        is already on `node` (an earlier bind of ours went through and its answer was lost), PodGone on a 409 that
        says the pod is being deleted or is another of that name (ours deleted). Raises otherwise."""
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, "uid": uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        try:
            drain(unvalidated(self.core.create_namespaced_binding)(namespace, body, _preload_content=False,
                                                                    _request_timeout=30))
        except ApiException as exc:
            if exc.status == 409:  # the API server's words: pod <name> is already assigned to node "<node>"
                message = status_message(exc.body) or ""
                if "is being deleted" in message or "UID in precondition" in message:
                    raise PodGone(message) from None
                return f'is already assigned to node "{node}"' in message
            raise
        return True

    def event(self, namespace: str, pod: str, uid: str, reason: str, message: str,
              type_: str = "Normal", action: str = "Binding") -> str:
        """Create an Event about a pod; returns its name (for :meth:`bump_event`)."""
        ts = now_iso()
        name = f"{pod}.{uuid.uuid4().hex[:16]}"
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": pod, "namespace": namespace, "uid": uid},
            "reason": reason, "message": message[:1024], "type": type_, "action": action,
            "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
            "reportingInstance": self.identity, "firstTimestamp": ts, "lastTimestamp": ts, "count": 1,
        }
        drain(unvalidated(self.core.create_namespaced_event)(namespace, body, _preload_content=False,
                                                              _request_timeout=30))
        return name

    def bump_event(self, namespace: str, name: str, count: int) -> None:
        """An isomorphic event happened again: raise the Event's count (as client-go's correlator does)."""
        patch = {"count": count, "lastTimestamp": now_iso()}
        drain(unvalidated(self.core.patch_namespaced_event)(name, namespace, patch, _preload_content=False,
                                                             _request_timeout=30))

    def mark_not_scheduled(self, namespace: str, pod: str, reason: str, message: str) -> None:
        """Set the PodScheduled condition to False (pods/status, strategic merge), as kube-scheduler does after a
        failed attempt: reason Unschedulable when no node fits, SchedulerError when the attempt failed (a bind the
        API refused, an error in the scheduler)."""
        patch = {"status": {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": reason, "message": condition_message(message),
            "lastProbeTime": None, "lastTransitionTime": now_iso()}]}}
        drain(unvalidated(self.core.patch_namespaced_pod_status)(pod, namespace, patch, _preload_content=False,
                                                                  _request_timeout=30))
