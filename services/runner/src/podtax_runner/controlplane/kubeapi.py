"""Kubernetes access for the control-plane executors: raw JSON calls through the official client
(``_preload_content=False``: several times faster than its models), each request counted by verb,
and the API server's /metrics scraped where reachable (the list+watch thread per kind: kwatch.py).

A timed request pays the client's own CPU between the two marks around it (request_sent, api_accepted): the calls
skip its validation of our bodies (``podtax.kubeclient.unvalidated``) and its credential refresh runs once a second,
not before every request (:func:`api_client`), as the scheduler's: ~0.2 ms of CPU a request that Nomad's client
(httpx) does not pay."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException
from podtax.kubeclient import refresh_at_most_every, unvalidated
from prometheus_client.parser import text_string_to_metric_families

from podtax_runner import retry as retries
from podtax_runner.controlplane.apierrors import Unreachable, broken, unreachable
from podtax_runner.controlplane.common import ANNOTATION_ATTEMPT, Aborted
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
            exc.podtax_call, exc.podtax_sent = name, sent[0]  # type: ignore[attr-defined]  # for apierrors.refusal
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
