"""List and watch one kind into handlers, like client-go's reflector.

Lists, hands the full set to `on_sync`, then watches from the list's resourceVersion, passing each
event to `on_event`. A `410 Gone` (as an ERROR event or an HTTP status) means the resourceVersion is
too old: it lists again. Any other failure is retried with a short backoff, logged once while it lasts (a
warning, again only when the problem changes) and its end once (the API answers again); the last one is kept
(`failure`) so that a start-up that gives up can say why (:func:`unsynced`: for a 403, the RBAC rule it lacks).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines
from podtax.kubeclient import WatchGone, follow_watch

from podtax_scheduler.kube import Kube, api_problem, status_message

log = logging.getLogger("podtax.scheduler.informer")
Obj = dict[str, Any]
CHECK = "check PODTAX_SCHEDULER_KUBECONFIG and the API server"


def unsynced(kind: str, timeout_s: float, failure: BaseException | None) -> str:
    """Why start-up gave up waiting for the `kind` informer's first list, in one line: for a 403 the RBAC rule the
    scheduler's service account lacks (list and watch on `kind`, a core-group resource, at the cluster scope, as
    deploy/k8s/scheduler.yaml grants), else the last failure, if any, and what to check."""
    head = f"the {kind} informer did not sync within {timeout_s:.0f}s"
    if isinstance(failure, ApiException) and failure.status == 403:
        said = " ".join(str(status_message(failure.body) or failure.reason or "").split())
        return (f"{head}: the API server forbids the scheduler to list {kind} (HTTP 403 Forbidden: {said}); its "
                f"ClusterRole needs list and watch on {kind} at the cluster scope (apiGroups [\"\"], resources "
                f"[\"{kind}\"], verbs [\"list\", \"watch\"], bound to its service account by a ClusterRoleBinding), "
                "as deploy/k8s/scheduler.yaml grants: apply it")
    return f"{head}: {api_problem(failure)}; {CHECK}" if failure is not None else f"{head}; {CHECK}"


class Informer:
    def __init__(self, kube: Kube, kind: str, on_sync: Callable[[list[Obj]], None],
                 on_event: Callable[[str, Obj], None], watch_timeout_s: int = 300) -> None:
        self.kube = kube
        self.kind = kind
        self.on_sync = on_sync
        self.on_event = on_event
        self.watch_timeout_s = watch_timeout_s
        self.synced = threading.Event()
        self.relists = 0
        self._stop = threading.Event()
        self._resp: Any = None
        self._failing: str | None = None  # the problem last logged, until the API answers again (one line each)
        self.failure: BaseException | None = None  # the last failure, until the API answers again
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        resp = self._resp
        if resp is not None:
            with contextlib.suppress(Exception):  # already closed
                resp.shutdown()  # unblocks a read in progress
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _answered(self) -> None:
        """The API answered again after failures that were logged: say so once."""
        self.failure = None
        if self._failing is not None:
            log.info("%s informer: the API server answers again", self.kind)
            self._failing = None

    def _list(self) -> str:
        items, rv = self.kube.list(self.kind)
        self._answered()
        self.on_sync(items)
        self.relists += 1
        self.synced.set()
        return rv

    def _run(self) -> None:
        rv: str | None = None
        delay = 0.2
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._list()
                rv = self._watch(rv)
                delay = 0.2
            except Exception as exc:  # noqa: BLE001 - API or connection trouble: retry from the last version
                if isinstance(exc, ApiException) and exc.status == 410:
                    log.info("%s watch: resourceVersion %s is gone; listing again", self.kind, rv)
                    rv = None
                    continue
                if self._stop.is_set():
                    return
                self.failure = exc
                problem = api_problem(exc)
                said, self._failing = problem == self._failing, problem
                (log.debug if said else log.warning)("%s informer: %s; retrying until it answers", self.kind, problem)
                self._stop.wait(delay)
                delay = min(delay * 2, 5.0)

    def _watch(self, rv: str) -> str | None:
        """Follow one watch stream; returns the resourceVersion to resume from (None = list again)."""
        resp = self.kube.lister(self.kind)(watch=True, resource_version=rv, allow_watch_bookmarks=True,
                      timeout_seconds=self.watch_timeout_s, _preload_content=False,
                      _request_timeout=(10, self.watch_timeout_s + 30))
        self._resp = resp
        self._answered()
        try:
            return follow_watch(iter_resp_lines(resp), rv, self._stop, self.on_event)
        except WatchGone as gone:
            log.info("%s watch: %s; listing again", self.kind, gone)
            return None
        finally:
            self._resp = None
            resp.release_conn()
