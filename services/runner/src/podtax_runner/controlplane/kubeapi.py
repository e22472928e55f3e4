"""Kubernetes access for the control-plane executors: raw JSON calls through the official client
(``_preload_content=False``: several times faster than its models), each request counted by verb,
a list+watch thread per kind, and the API server's /metrics scraped where reachable.

A timed request pays the client's own CPU between the two marks around it (request_sent, api_accepted): the calls
skip its validation of our bodies (``podtax.kubeclient.unvalidated``) and its credential refresh runs once a second,
not before every request (:func:`api_client`), as the scheduler's: ~0.2 ms of CPU a request that Nomad's client
(httpx) does not pay."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines
from podtax.kubeclient import refresh_at_most_every, unvalidated
from prometheus_client.parser import text_string_to_metric_families

from podtax_runner import retry as retries
from podtax_runner.controlplane.common import (
    ANNOTATION_ATTEMPT,
    Aborted,
    Unreachable,
    broken,
    not_allowed,
    refusal,
    unreachable,
)
from podtax_runner.controlplane.timeline import Timeline

log = logging.getLogger("podtax.runner.controlplane")
Obj = dict[str, Any]
ATTEMPTS = 3
THROTTLED_ATTEMPTS = 10  # attempts of a call whose answers did nothing (retry.did_nothing: 429), as client-go's
# verbs sent again when their connection broke before the answer (the server died or restarted mid-request):
# a read changes nothing; a create or delete sent twice could (its object's error says what happened instead)
READS = frozenset({"list", "get"})
TIMEOUT = (10, 60)  # (connect, read) seconds of one request; a call with no answer by then is given up
READ_MIN_S = 5.0  # the least a list or get is given under Kube.reads_by, however little of it is left
# urllib3's own retries, under Kube.call's counted ones: a connection that fails is tried again (3 times, as its
# default), a request sent and not answered in TIMEOUT is not. Its default also re-sends an idempotent request
# (DELETE, GET) whose answer timed out, unseen and uncounted: a hung DELETE took 4 read timeouts (4 minutes) to give
# up, against one for a create, and a slow one's time hid a second request (client-go does not re-send either). Nor
# does it re-send an answer with Retry-After (its default does, for a DELETE or GET answered 413, 429 or 503): Kube.call
# does, counted and re-timed (a throttled DELETE's wait was in `deleted`, said exact, the request uncounted).
URLLIB3_RETRIES = urllib3.util.Retry(total=3, read=0, respect_retry_after_header=False)


def api_client(cfg: client.Configuration) -> client.ApiClient:
    """The ApiClient of a control-plane run or cleanup: `cfg` with URLLIB3_RETRIES (no unseen re-sends), its
    credential refresh run at most once a second."""
    cfg.retries = URLLIB3_RETRIES
    refresh_at_most_every(cfg)
    return client.ApiClient(cfg)


class Kube:
    """CoreV1 calls returning dicts; each HTTP request counts in the timeline (create, delete, get, list, watch)."""

    def __init__(self, api: client.ApiClient, timeline: Timeline | None = None) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.timeline = timeline
        self._down: tuple[float, Unreachable] | None = None  # since when no request reached the API, and why
        self.forbidden: Aborted | None = None  # a watch the API refuses (401/403): the run ends (down)
        self.namespace_refused = ""  # why the run's namespace could not be created (a 403: fine if it exists)
        self.reads_by: float | None = None  # time.monotonic() by which a list or get should have its answer
        self.deadline: float | None = None  # time.monotonic() after which no call is sent again (the run's end)

    def _count(self, verb: str) -> None:
        if self.timeline is not None:
            self.timeline.count(verb)

    def call(self, verb: str, fn: Callable[..., Any], *args: Any, retry: bool = True, until: float | None = None,
             again: Callable[[BaseException], None] | None = None, **kwargs: Any) -> Obj:
        """One API call (retried on 429/5xx/connection errors when `retry`; a list or get sent with retry=False only
        after an answer that did nothing, as client-go would, after the answer's Retry-After if longer
        than the backoff: ATTEMPTS in all, THROTTLED_ATTEMPTS while the answer did nothing, retry.did_nothing); the
        response body as a dict; `until`: a time.monotonic() by which each attempt times out
        (a cleanup's delete: its share of the wait); `again(error)`: called before each attempt after the first (a
        timed call re-times itself, Timeline.resender). No wait between attempts goes past `until`, `deadline` or
        (a list or get) `reads_by`, nor is the call sent again after it: it raises retry.Late (a Retry-After of 10 s
        held a run with a 3 s timeout 22 s)."
        Every attempt is counted: the harness's own load on the API server is part of the result.
        A call that could not reach the API (its connection refused after the retries) raises Unreachable.
        `fn` is called without the client's body validation (unvalidated)."""
        name, fn = getattr(fn, "__name__", ""), unvalidated(fn)
        reads_by = max(self.reads_by, time.monotonic() + READ_MIN_S) if self.reads_by and verb in READS else None
        by = min((t for t in (until, self.deadline, reads_by) if t is not None), default=None)
        sent, failed = [0], []  # attempts sent, and their errors

        def attempt() -> Obj:
            self._count(verb)
            sent[0] += 1
            try:
                resp = fn(*args, _preload_content=False, _request_timeout=self._timeout(verb, until), **kwargs)
            except BaseException as exc:
                failed.append(exc)
                raise
            self.reached()
            data = resp.data
            return json.loads(data) if data else {}

        try:
            if not retry and verb not in READS:
                return attempt()
            if not retry:  # a single read is still sent again after an answer that did nothing (a 429: safe)
                return retries.call(attempt, verb, attempts=1, first_s=0.05, factor=4, max_s=1,
                                    retry_on=retries.did_nothing, again=again, by=by,
                                    patient=retries.did_nothing, patient_attempts=THROTTLED_ATTEMPTS)
            return retries.call(attempt, verb, attempts=ATTEMPTS, first_s=0.05, factor=4, max_s=1,
                                retry_on=lambda exc: retries.transient(exc) or unreachable(exc)
                                or (verb in READS and broken(exc)), again=again, by=by,
                                patient=retries.did_nothing, patient_attempts=THROTTLED_ATTEMPTS)
        except ApiException as exc:
            self.reached()  # answered
            exc.podtax_call, exc.podtax_sent = name, sent[0]  # type: ignore[attr-defined]  # for common.refusal
            # no attempt before this answer took effect (each was answered did_nothing): its 404 is not the run's own
            exc.podtax_none_before = all(retries.did_nothing(e) for e in failed[:-1])  # type: ignore[attr-defined]
            raise
        except Exception as exc:
            if (error := self.missed(exc)) is not None:
                raise error from None
            raise

    def _timeout(self, verb: str, until: float | None = None) -> tuple[float, float]:
        """One attempt's (connect, read) timeouts: TIMEOUT, cut to what is left before `until`; a read's to what is
        left before `reads_by`, but never below READ_MIN_S (a cleanup's lists: one that hung held it TIMEOUT past
        its wait)."""
        if until is not None:
            left = max(0.1, until - time.monotonic())
        elif self.reads_by is None or verb not in READS:
            return TIMEOUT
        else:
            left = max(READ_MIN_S, self.reads_by - time.monotonic())
        return min(TIMEOUT[0], left), min(TIMEOUT[1], left)

    def reached(self) -> None:
        """A request got an answer: the API is up."""
        self._down = None

    def missed(self, exc: BaseException) -> Unreachable | None:
        """A request failed with `exc`: when it could not reach the API, note since when, and say why. A request
        whose connection broke (the server closed it) and that is not sent again (a create, a delete) could not
        reach it either when a new connection to the API is now refused: it died under the request."""
        if broken(exc) and (refused := self._refused()) is not None:
            exc = refused
        if not unreachable(exc):
            return None
        error = Unreachable("kubernetes-unreachable", "the Kubernetes API", self.api.configuration.host, exc,
                            "is it running, and is that the server of the kubeconfig (PODTAX_RUNNER_KUBECONFIG)?")
        self._down = self._down or (time.monotonic(), error)
        return error

    def _refused(self) -> ConnectionRefusedError | None:
        """The refusal of a TCP connection to the API's address now, else None (no HTTP request: not counted)."""
        url = urlsplit(self.api.configuration.host)
        try:
            socket.create_connection((url.hostname, url.port or 443), timeout=1).close()
        except ConnectionRefusedError as exc:
            return exc
        except OSError:
            return None
        return None

    def down(self, grace_s: float) -> Aborted | None:
        """Why no request has reached the API for `grace_s` or longer (a watch or a poll that keeps being
        refused, each retried on its own), or why a watch may not be opened (forbidden), else None."""
        if self.forbidden is not None:
            return self.forbidden
        down = self._down
        return down[1] if down is not None and time.monotonic() - down[0] >= grace_s else None

    def ensure_namespace(self, ns: str) -> None:
        try:
            self.call("create", self.core.create_namespace,
                      {"metadata": {"name": ns, "labels": {"app.kubernetes.io/part-of": "podtax"}}})
        except ApiException as exc:
            if exc.status not in (403, 409):  # exists, or we may not create namespaces (fine if it exists)
                raise
            if exc.status == 403:
                self.namespace_refused = retries.brief(exc)

    def scrape(self) -> dict[str, float] | None:
        """`apiserver_request_total` from /metrics as {"<verb> <resource> <code>": n}; None when not served."""
        try:
            params = self.api.param_serialize(method="GET", resource_path="/metrics", auth_settings=["BearerToken"])
            resp = self.api.call_api(*params, _request_timeout=(5, 15))
            if resp.status != 200:
                return None
            return request_totals(resp.read().decode("utf-8", "replace"))
        except Exception as exc:  # noqa: BLE001 - metrics are optional (403 on a locked-down cluster, 404 ...)
            log.info("no API server metrics: %s", exc)
            return None


def stored_before(kube: Kube, exc: BaseException, read: Callable[..., Any], name: str, namespace: str,
                  attempt: str) -> Obj | None:
    """The run's own object `name` when its create, sent again, met 409 AlreadyExists: an earlier attempt was stored
    although its answer was an error (the API server's 504 while the write went on and committed). This execution's
    `attempt` (annotation podtax.io/attempt, Context.attempt) tells it from a leftover: an earlier execution of the same
    run left objects of the same name and run label (review r1: one was adopted, its old events and times with it).
    None otherwise (an audit: such an object was failed, a claim as 'left by an earlier run of campaign ...', its
    timings lost)."""
    if not (isinstance(exc, ApiException) and exc.status == 409 and getattr(exc, "podtax_sent", 1) > 1):
        return None
    try:
        obj = kube.call("get", read, name, namespace, retry=False)
    except (ApiException, OSError):
        return None
    return obj if ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_ATTEMPT) == attempt else None


def request_totals(text: str, name: str = "apiserver_request_total",
                   labels: tuple[str, str, str] = ("verb", "resource", "code")) -> dict[str, float]:
    """Parse Prometheus text: the samples of counter `name` keyed by three labels ("verb resource code"). Only the
    lines naming it are parsed: a real API server's page is megabytes of other families (a synthetic 7.5 MB page:
    1.45 s parsed whole, 45 ms so; scraped three times a run), and a line of theirs the parser refuses no longer
    loses the counter."""
    out: dict[str, float] = {}
    text = "".join(line + "\n" for line in text.splitlines() if name in line)
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError:
        return out
    for family in families:
        for sample in family.samples:
            if sample.name == name:
                key = " ".join(sample.labels.get(label, "") for label in labels)
                out[key] = out.get(key, 0.0) + sample.value
    return out


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
            for line in iter_resp_lines(resp):
                self.heard = time.monotonic()
                if self._stop.is_set():
                    return rv
                if not line:
                    continue
                event = json.loads(line)
                etype, obj = event.get("type"), event.get("object") or {}
                if etype == "ERROR":
                    if obj.get("code") == 410:
                        return None
                    raise RuntimeError(f"watch error: {obj.get('message', obj)}")
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                if etype != "BOOKMARK":
                    self.on_event(str(etype), obj)
        finally:
            self._resp = None
            with contextlib.suppress(Exception):
                resp.release_conn()
        return rv


def resync(watchers: list[Watcher], quiet_s: float, timeout: float) -> bool:
    """Watcher.resync on each of `watchers` (every silent one, not only the first); True when one was listed again."""
    return any([w.resync(quiet_s, timeout) for w in watchers])
