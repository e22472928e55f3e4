"""List+watch of one kind for the control-plane executors, in a thread: Watcher (its calls through kubeapi.Kube,
counted), and resync, which lists again the watches that went silent."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines
from podtax.kubeclient import WatchGone, follow_watch, unvalidated

from podtax_runner import retry as retries
from podtax_runner.controlplane.apierrors import not_allowed, refusal
from podtax_runner.controlplane.kubeapi import Kube, Obj

log = logging.getLogger("podtax.runner.controlplane")


class Watcher:
    """List, then watch from the list's resourceVersion, in a thread; a watch that ends or drops lists again.

    `on_sync(items)` gets each list, `on_event(type, obj)` each watch event (not bookmarks).
    `synced` is set once the first list is done and the watch is being opened. A watch resumed from its last
    resourceVersion would deliver what happened while it was down late, as if it had just happened; the re-list
    after a drop tells those changes apart instead: the timeline records the gap (`name`, from the drop until a
    watch is open again) and the end points its re-lists mark (the parser's WATCH_GAP run flag).
    """

    def __init__(self, kube: Kube, lister: Callable[..., Any], args: tuple[Any, ...], selector: str | None,
                 on_sync: Callable[[list[Obj]], None], on_event: Callable[[str, Obj], None],
                 name: str = "") -> None:
        self.kube, self.lister, self.args, self.selector = kube, lister, args, selector
        self.name = name or lister.__name__.removeprefix("list_")
        self.on_sync, self.on_event = on_sync, on_event
        self.synced = threading.Event()
        self.failed: BaseException | None = None
        self._stop = threading.Event()
        self._resp: Any = None
        self.listed_at: float | None = None  # when the list on_sync is handling was asked for (timeline seconds)
        self._gap: dict[str, Any] | None = None  # the timeline's open gap (Timeline.open_gap) while the watch is down
        self.heard = time.monotonic()  # when the open watch last delivered anything (an event, a bookmark)
        self.lists = 0  # lists handed to on_sync
        self._quiet: float | None = None  # closed by resync: when it went silent (monotonic), the gap's start
        self._thread = threading.Thread(target=self._run, name="podtax-cp-watch", daemon=True)

    def start(self, timeout: float = 30) -> None:
        self._thread.start()
        if not self.synced.wait(timeout):
            raise TimeoutError(f"listing for the watch took longer than {timeout:g} s")
        if self.failed:
            raise self.failed

    def stop(self) -> None:
        self._stop.set()
        resp = self._resp
        if resp is not None:
            with contextlib.suppress(Exception):
                resp.shutdown()
        self._thread.join(timeout=5)

    def _list(self) -> str:
        """List and hand the items to on_sync; during a gap, inside it (what the list shows changed in the gap)."""
        kwargs = {"label_selector": self.selector} if self.selector else {}
        tl, gap = self.kube.timeline, self._gap
        self.listed_at = tl.now() if tl is not None else None
        body = self.kube.call("list", self.lister, *self.args, **kwargs)
        with tl.in_gap(gap) if tl is not None and gap is not None else contextlib.nullcontext():
            self.on_sync(body.get("items") or [])
        self.lists += 1
        return str((body.get("metadata") or {}).get("resourceVersion", ""))

    def _dropped(self) -> None:
        """The watch ended or failed: a gap opens (once, after the first list) until a watch is open again."""
        tl = self.kube.timeline
        if self._gap is None and tl is not None and self.synced.is_set() and not self._stop.is_set():
            self._gap = tl.open_gap(self.name, self._quiet)

    def resync(self, quiet_s: float, timeout: float) -> bool:
        """Close the watch if it delivered nothing (no event, no bookmark) for `quiet_s`, and wait up to `timeout` for
        the list that follows; True when it was listed again. A half-open connection (an API server restarted or
        upgraded behind a load balancer that kept the client's side) delivers nothing and never ends: a wait saw its
        objects stuck and the run ended 'N of N objects stuck in the bind wait (...; its newest event:
        ProvisioningSucceeded ...)' with every claim Bound. A real API server sends a watch that asked for them a
        bookmark every minute (client-go closes an HTTP/2 connection silent for 45 s); the list marks what the watch
        missed late, in a gap from when it went silent (WATCH_GAP), and a gap that hid nothing is forgotten."""
        resp, silent = self._resp, time.monotonic() - self.heard
        if resp is None or silent < quiet_s or self._stop.is_set():
            return False
        lists, self._quiet = self.lists, self.heard
        log.warning("watch %s: nothing heard for %.1f s (no event, no bookmark) while objects were waited for: closed "
                    "and listed again (a silent watch: a half-open connection?)", self.name, silent)
        with contextlib.suppress(Exception):
            resp.shutdown()
        end = time.monotonic() + timeout
        while self.lists == lists and time.monotonic() < end and not self._stop.is_set() and self.failed is None:
            time.sleep(0.02)
        return self.lists != lists

    def _run(self) -> None:
        rv: str | None = None
        delay = 0.1
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._list()
                    self.synced.set()
                self._watch(rv)
                rv = None  # it ended: list again (what changed meanwhile is late, and the list says which)
                self._dropped()
                delay = 0.1
            except Exception as exc:  # noqa: BLE001 - retried; a first list that fails is reported by start()
                if self._stop.is_set():
                    return
                if self._quiet is not None and rv is not None:  # its stream, closed by resync: listed again at once
                    rv = None
                    self._dropped()
                    continue
                self.kube.missed(exc)  # a run waiting on this watch ends once the API stays unreachable (Kube.down)
                rv = None
                self._dropped()
                if isinstance(exc, ApiException) and exc.status == 410:
                    continue
                if not_allowed(exc):  # never allowed: the run ends (down)
                    self.kube.forbidden = refusal(exc, self.kube.api.configuration.host, self.args[0] if self.args
                                                  else "")
                    self.failed = self.failed or exc
                    self.synced.set()
                    return
                if not self.synced.is_set():
                    self.failed = exc
                    self.synced.set()
                    return
                wait = max(delay, retries.retry_after(exc))  # a throttled watch (429) says when to come back
                log.warning("watch %s: %s: %s; retrying in %.1f s", self.name, type(exc).__name__, retries.brief(exc),
                            wait)  # one line: an ApiException's own text dumps its headers and body
                self._stop.wait(wait)
                delay = min(delay * 2, 2.0)

    def _watch(self, rv: str) -> str | None:
        kwargs: dict[str, Any] = {"label_selector": self.selector} if self.selector else {}
        self.kube._count("watch")
        resp = unvalidated(self.lister)(*self.args, watch=True, resource_version=rv, allow_watch_bookmarks=True,
                                        timeout_seconds=300, _preload_content=False, _request_timeout=(10, 330),
                                        **kwargs)
        self._resp, self.heard = resp, time.monotonic()
        self.kube.reached()
        if self._gap is not None and self.kube.timeline is not None:
            self.kube.timeline.close_gap(self._gap)
            if self._quiet is not None:
                self.kube.timeline.discard_gap(self._gap)
            self._gap = None
        self._quiet = None
        try:
            return follow_watch(iter_resp_lines(resp), rv, self._stop, self.on_event, on_line=self._hear)
        except WatchGone:
            return None
        finally:
            self._resp = None
            with contextlib.suppress(Exception):
                resp.release_conn()

    def _hear(self) -> None:
        self.heard = time.monotonic()


def resync(watchers: list[Watcher], quiet_s: float, timeout: float) -> bool:
    """Watcher.resync on each of `watchers` (every silent one, not only the first); True when one was listed again."""
    return any([w.resync(quiet_s, timeout) for w in watchers])
