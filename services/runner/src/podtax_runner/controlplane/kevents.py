"""What an object's events say when a run gives up on it: a claim stuck Pending carries the external provisioner's
Warning event ProvisioningFailed ('failed to provision volume with StorageClass "x": rpc error: ...'), which is the
cause `kubectl describe pvc` shows and the claim's status does not. Read once per object given up, only then."""

from __future__ import annotations

import logging
import time
from typing import Any

from kubernetes.client.rest import ApiException

from podtax_runner.controlplane.common import CALL_ERRORS
from podtax_runner.controlplane.kubeapi import Kube, Obj
from podtax_runner.retry import brief

log = logging.getLogger("podtax.runner.controlplane")
SAID_CHARS = 150  # of the quote: with wait_for's words it stays within timeline.ERROR_CHARS (the message's end cut)
LIST_S = 5.0  # the longest the list of one object's events may take


def _when(event: Obj) -> str:
    """When `event` was last seen, to the second (core/v1 lastTimestamp, else an events.k8s.io recorder's series or
    eventTime, else its creation): comparable as text."""
    series = event.get("series") or {}
    return str(event.get("lastTimestamp") or series.get("lastObservedTime") or event.get("eventTime")
               or (event.get("metadata") or {}).get("creationTimestamp") or "")[:19]


def newest(events: list[Obj]) -> Obj | None:
    """The newest of `events`, a Warning before any Normal one (the provisioner's `Provisioning` of its next try is
    newer than the failure that explains the wait); of those last seen in the same second, the last listed."""
    ranked = [((e.get("type") == "Warning", _when(e), i), e) for i, e in enumerate(events)]
    return max(ranked, key=lambda pair: pair[0])[1] if ranked else None


def quote(event: Obj) -> str:
    """`its newest event: ProvisioningFailed (5 times): <message>`, cut to SAID_CHARS."""
    count = event.get("count") or (event.get("series") or {}).get("count") or 1
    times = f" ({count} times)" if count > 1 else ""
    return f"its newest event: {event.get('reason')}{times}: {event.get('message') or ''}".strip()[:SAID_CHARS]


class Events:
    """Reads the events of a run's objects in namespace `ns`; once the API refused (401, 403), says so instead."""

    def __init__(self, kube: Kube, ns: str) -> None:
        self.kube, self.ns = kube, ns
        self.refused: str | None = None  # what the refusal was, once
        self.unanswered = False  # a list got no answer (or could not be sent): the others are not tried (LIST_S each)

    def said(self, name: str, kind: str, uid: str | None = None) -> str | None:
        """What the newest event of object `name` (of `kind`, and `uid` when known: not a namesake's) says, quoted;
        when events may not be listed, that in one phrase with the RBAC rule to grant; None when there is none."""
        if self.unanswered:
            return None
        if self.refused is None:
            selector = f"involvedObject.name={name},involvedObject.kind={kind}"
            try:
                items: list[Any] = self.kube.call("list", self.kube.core.list_namespaced_event, self.ns,
                                                  field_selector=selector, retry=False,
                                                  until=time.monotonic() + LIST_S).get("items") or []
            except ApiException as exc:
                if exc.status not in (401, 403):
                    log.info("events of %s %s not read: %s", kind, name, brief(exc))
                    return None
                self.refused = f"{exc.status} {exc.reason}"
            except CALL_ERRORS as exc:
                log.info("events of %s %s not read (the others' not tried): %s", kind, name, exc)
                self.unanswered = True
                return None
            else:
                mine = [e for e in items if uid is None or (e.get("involvedObject") or {}).get("uid") == uid]
                event = newest(mine)
                return quote(event) if event is not None else None
        return f"its events not readable ({self.refused}): grant the runner list on events in namespace {self.ns}"
