"""What an object's events say when a run gives up on it: a claim stuck Pending carries the external provisioner's
Warning event ProvisioningFailed ('failed to provision volume with StorageClass "x": rpc error: ...'), which is the
cause `kubectl describe pvc` shows and the claim's status does not. Read once per give-up (or abort) for all the
objects it names, only then."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from kubernetes.client.rest import ApiException

from podtax_runner.controlplane.apierrors import CALL_ERRORS
from podtax_runner.controlplane.kubeapi import Kube, Obj
from podtax_runner.retry import brief

log = logging.getLogger("podtax.runner.controlplane")
SAID_CHARS = 150  # of the quote: with wait_for's words it stays within timeline.ERROR_CHARS (the message's end cut)
LIST_S = 5.0  # the longest one reading of the events may take, all its pages
PAGE = 500  # events per page of that list
PAGES = 20  # pages at most (10,000 events): the objects whose events come after are not quoted


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

    def said(self, names: list[str], kind: str, uids: Mapping[str, str]) -> dict[str, str]:
        """What the newest event of each object of `names` (of `kind`, and uid `uids[name]` when known: not a
        namesake's) says, quoted, in the order of `names`; those with no event left out. Read in one list of the
        namespace's events of `kind` (by name too when there is one name), however many objects are given up or
        stuck at once: before, one list per object, in turn (2,000 claims stuck with no event yet at a run's timeout
        sent 2,000 lists, up to LIST_S each, to an API server already behind). When events may not be listed, each
        says that in one phrase with the RBAC rule to grant."""
        if not names or self.unanswered:
            return {}
        if self.refused is None:
            try:
                listed = self._list(kind, names[0] if len(names) == 1 else None)
            except ApiException as exc:
                if exc.status not in (401, 403):
                    log.info("events of %d %s(s) not read: %s", len(names), kind, brief(exc))
                    return {}
                self.refused = f"{exc.status} {exc.reason}"
            except CALL_ERRORS as exc:
                log.info("events of %d %s(s) not read (not tried again): %s", len(names), kind, exc)
                self.unanswered = True
                return {}
            else:
                out: dict[str, str] = {}
                for name in names:
                    uid = uids.get(name)
                    event = newest([e for e in listed.get(name, []) if uid is None
                                    or (e.get("involvedObject") or {}).get("uid") == uid])
                    if event is not None:
                        out[name] = quote(event)
                return out
        return {name: f"its events not readable ({self.refused}): grant the runner list on events in namespace "
                      f"{self.ns}" for name in names}

    def _list(self, kind: str, name: str | None) -> dict[str, list[Obj]]:
        """The namespace's events of `kind` (of object `name` only, when given) by their object's name: pages of
        PAGE, at most PAGES of them (what is beyond is not quoted), all within LIST_S."""
        selector = f"involvedObject.kind={kind}" if name is None else \
            f"involvedObject.name={name},involvedObject.kind={kind}"
        until, token = time.monotonic() + LIST_S, None
        out: dict[str, list[Obj]] = {}
        for _ in range(PAGES):
            more = {"_continue": token} if token else {}
            page = self.kube.call("list", self.kube.core.list_namespaced_event, self.ns, field_selector=selector,
                                  limit=PAGE, retry=False, until=until, **more)
            for event in page.get("items") or []:
                out.setdefault((event.get("involvedObject") or {}).get("name"), []).append(event)
            if not (token := (page.get("metadata") or {}).get("continue")):
                break
        return out
