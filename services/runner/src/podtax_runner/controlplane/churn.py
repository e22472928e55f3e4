"""What the Kubernetes executors (volume-churn, pod-startup) share: ObjectChurn."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from podtax_runner.controlplane.apierrors import (
    CALL_ERRORS,
    fail_object,
    namespace_lost,
    not_allowed,
    refusal,
    timed_out,
    too_many_failed,
)
from podtax_runner.controlplane.common import Context
from podtax_runner.retry import Late
from podtax_runner.retry import message as said


class ObjectChurn:
    """What the Kubernetes executors (volume-churn, pod-startup) share: an API error recorded on its object and
    counted once an object against the abort limit, a delete timed. Subclasses: ctx, tl, kube, ns, p, lock, failures."""

    ctx: Context
    tl: Any
    kube: Any
    ns: str
    p: Any
    lock: threading.Lock
    failures: Counter[str]

    def _error(self, name: str, what: str, exc: Exception, words: str = "") -> None:  # words: e.g. a collision's
        if isinstance(exc, Late):  # the run's deadline came while the call waited to be sent again: the run ends
            self.ctx.check()
        if not_allowed(exc):  # the same for every object: the run ends, ended by this call
            (aborted := refusal(exc, self.kube.api.configuration.host, self.ns)).call = what
            raise aborted
        if lost := namespace_lost(exc, self.kube.api.configuration.host, self.ns, self.kube.namespace_refused):
            raise lost
        if words:
            detail = words
        elif isinstance(exc, ApiException):
            detail = f"{what}: {exc.status} {exc.reason}" + (f": {said(exc)[:200]}" if said(exc) else "")
        elif isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
            detail = f"{what}: {exc.reason}"  # its last error: the URL and 'Max retries' cut the rest at 300 characters
        else:
            detail = f"{what}: {exc}"
        first = self.tl.objects[name].error is None  # an object failing two calls (create consumer, delete): one
        fail_object(self.tl, name, detail, exc)
        with self.lock:
            self.failures["unanswered" if timed_out(exc) else "refused"] += first
            self.failures["delete"] += first and what == "delete"
            if aborted := too_many_failed("the API", self.failures, self.p.count, detail):
                raise aborted

    DONE: tuple[str, str] = ("ready", "Ready")  # the end point the create wait waits for, and its name
    not_ready: Callable[[], dict[str, str]]  # objects not at DONE yet -> what they lack

    def gone_early(self, name: str) -> None:
        """Object `name` went before this run deleted it (another client deleted it, or its namespace): it failed, in
        no phase, as kube-burner drops a pod never Ready (before, one was given up as a lower bound of phases it never
        finished, or refused by the parser; a claim gone after Bound was counted with no `deleted`)."""
        t, (point, word) = self.tl.objects[name].t, self.DONE
        since = f"{self.tl.now() - t['request_sent']:.1f} s after request_sent" if "request_sent" in t else "early"
        lacked = f"after {word}" if point in t else f"before {word} ({self.not_ready().get(name, 'not ' + word)})"
        self.tl.fail(name, f"deleted {lacked}, {since}, not by this run: by another client, or with namespace "
                           f"{self.ns}; its times not counted")

    def _delete(self, name: str, fn: Callable[..., Any], accepted: str | None = None) -> None:
        """Delete object `name` with `fn` once it exists and is not gone (deleted by another); a 404 means it is
        already gone: by another client (gone_early) when no earlier attempt took effect (the first, or after 429s)."""
        if not self.tl.has(name, "api_accepted") or self.tl.has(name, "gone"):
            return
        self.tl.mark(name, "delete_requested")
        try:
            self.kube.call("delete", fn, name, self.ns, again=self.tl.resender(name, "delete_requested", "delete"))
            if accepted:
                self.tl.mark(name, accepted)
        except ApiException as exc:
            if exc.status == 404:
                self.tl.mark(name, "gone")
                if getattr(exc, "podtax_none_before", True):  # no attempt took effect before (first, or after 429s)
                    self.gone_early(name)
            else:
                self._error(name, "delete", exc)
        except CALL_ERRORS as exc:
            self._error(name, "delete", exc)
