"""What every control-plane executor shares: the run context, names and labels, a worker pool that
stops early, and waiting on the timeline."""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import urllib3
from kubernetes.client.exceptions import ApiException
from podtax import events

from podtax_runner.controlplane.timeline import Timeline, run_label
from podtax_runner.retry import Late, brief, transient
from podtax_runner.retry import message as said

T = TypeVar("T")
log = logging.getLogger("podtax.runner.controlplane")
LABEL_CAMPAIGN = "podtax.io/campaign"
LABEL_RUN = "podtax.io/run"
LABEL_KIND = "podtax.io/kind"
# one value per execution of a run (Context.attempt): tells the objects this execution made from those an earlier
# execution of the same run left, which carry the same names and labels (kubeapi.stored_before)
ANNOTATION_ATTEMPT = "podtax.io/attempt"
KIND = "control-plane"  # sets these objects apart from pod runs' Jobs, which carry the same campaign label
MANAGED = {"app.kubernetes.io/managed-by": "podtax"}
WAIT_STEP_S = 0.02
# a Kubernetes object of a run (object_name): kind, campaign token, run token, number; names of the old naming
# (before campaign tokens) lack the campaign token, so `campaign` is None for them
NAME = re.compile(r"podtax-(?P<kind>[a-z]+)-(?:(?P<campaign>[0-9a-f]{8})-)?(?P<run>[0-9a-f]{10})-[0-9]{4,5}")


def campaign_token(campaign: str) -> str:
    """The campaign's token in object names: sha1 of its `podtax.io/campaign` label value (the name cut to 63,
    which a campaign name never exceeds), so a cleanup that holds only the label selector finds the same token."""
    return hashlib.sha1(campaign[:63].encode()).hexdigest()[:8]


def object_name(kind: str, campaign: str, run_id: str, i: int) -> str:
    """`podtax-<kind>-<sha1(campaign)[:8]>-<sha1(run id)[:10]>-<nnnn>` (5 digits for the 10,000th, a count's
    limit), at most 11 + 8 + 1 + 10 + 1 + 5 = 36 characters (a DNS label may have 63). The campaign token lets
    `podtax volumes cleanup --campaign` tell the campaign of a PV whose claim is gone: the PV's claimRef keeps
    only the claim's name and namespace."""
    return f"podtax-{kind}-{campaign_token(campaign)}-{run_label(run_id)}-{i:04d}"


# what a call that got no answer in time raises (socket, urllib3 under the Kubernetes client, httpx for Nomad)
TIMEOUTS = (TimeoutError, urllib3.exceptions.TimeoutError, httpx.TimeoutException)
# what a call whose connection could not be made raises: refused, or not set up in time. urllib3's
# NewConnectionError (refused) is a ConnectTimeoutError, so a TimeoutError too: a refused connection was taken for a
# call that got no answer, its object given up as a lower bound (with urllib3's retries both end as MaxRetryError)
UNREACHABLE = (ConnectionRefusedError, urllib3.exceptions.ConnectTimeoutError, httpx.ConnectError,
               httpx.ConnectTimeout)
# what a Kubernetes call of an object may raise that fails that object, not the run (urllib3's read timeout is no
# OSError: a create that timed out ended the run; a DELETE, which urllib3 itself retries as idempotent, raises
# MaxRetryError once its retries timed out too: a delete that timed out ended the run; a create whose connection
# broke before its answer raises ProtocolError)
CALL_ERRORS = (ApiException, OSError, urllib3.exceptions.TimeoutError, urllib3.exceptions.MaxRetryError,
               urllib3.exceptions.ProtocolError)


def last_error(exc: BaseException) -> BaseException:
    """`exc`, or for urllib3's MaxRetryError the error of its last attempt."""
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        return exc.reason
    return exc


def unreachable(exc: BaseException | None) -> bool:
    """A call could not reach the API: its connection was refused or not set up in time (after urllib3's retries)."""
    return exc is not None and isinstance(last_error(exc), UNREACHABLE)


def broken(exc: BaseException | None) -> bool:
    """A call's connection broke before its answer (the server closed it: dying or restarting); safe to send
    again only for a read (list, get)."""
    return exc is not None and isinstance(last_error(exc), urllib3.exceptions.ProtocolError)


def timed_out(exc: BaseException | None) -> bool:
    """A call was sent and got no answer in time: a timeout, or urllib3's MaxRetryError after retries that each
    timed out; not a call that could not reach the API (unreachable)."""
    return exc is not None and isinstance(last_error(exc), TIMEOUTS) and not unreachable(exc)


def fail_object(tl: Timeline, name: str, detail: str, exc: BaseException | None = None) -> None:
    """Record on the timeline that a call of object `name` failed: a call that timed out was given up
    (Timeline.give_up: the object counts as a lower bound in the phase it was in, as a straggler wait_for gives
    up does, on either backend); one that was answered with a refusal is failed, in no phase."""
    if timed_out(exc):
        tl.give_up(name, f"{detail}: no answer in time, given up, the run went on")
    else:
        tl.fail(name, detail)


class Aborted(Exception):
    """The run stopped early (timeout, SIGTERM, too many errors), what it made deleted; `call`: the call refused."""

    def __init__(self, reason: str, detail: str, call: str = "") -> None:
        super().__init__(detail)
        self.reason, self.detail, self.call = reason, detail, call


class Unreachable(Aborted):
    """A call could not reach the API after its retries (unreachable): the run ends at once, naming the address
    (an audit: with kubesim stopped mid-run, each refused delete was given up as a lower bound, "no answer in
    time", and a watch refused until the run's timeout ended it as "20 of 20 objects stuck in the bind wait")."""

    def __init__(self, reason: str, api: str, address: str, exc: BaseException, fix: str) -> None:
        cause = last_error(exc)
        cause = cause.__cause__ if isinstance(cause.__cause__, OSError) else cause  # urllib3's wraps the socket's
        self.cause = f"{type(cause).__name__}: {cause}"
        super().__init__(reason, f"cannot reach {api} at {address} ({self.cause}): {fix}")


# what a control-plane run asks of Kubernetes (docs/control-plane.md), for the fix of a 401/403
GRANTS = ("persistentvolumeclaims and pods in namespace {ns}: create, delete, get, list, watch; persistentvolumes and "
          "storageclasses: get, list, watch")


def not_allowed(exc: BaseException) -> bool:
    """The API refused the runner's account, the same for every object: 401 (its credentials), or RBAC's 403
    ("... cannot create resource ..."; a quota's or an admission webhook's 403 is about one object)."""
    return isinstance(exc, ApiException) and (exc.status == 401 or (
        exc.status == 403 and re.search(r"cannot [a-z]+ resource", said(exc)) is not None))


def namespace_lost(exc: BaseException, host: str, namespace: str, refused: str = "") -> Aborted | None:
    """The end of a run whose object's create the API refused for the run's `namespace`, the same for every object:
    being deleted (NamespaceLifecycle's 403 `unable to create new content in namespace <ns> because it is being
    terminated`: deleted mid-run, or stuck Terminating behind a finalizer) or gone (its 404 `namespaces "<ns>" not
    found`; `refused`: why the run could not create it, a 403, so it may never have been there); else None. Each
    create failed its object until 11 had: `the API refused 11 of 30 requests`, no fix."""
    if not isinstance(exc, ApiException) or exc.status not in (403, 404):
        return None
    words, what = said(exc), brief(exc)
    if exc.status == 403 and f"namespace {namespace} because it is being terminated" in words:
        return Aborted("kubernetes-error", f"the Kubernetes API at {host} refuses new objects in namespace "
                       f"{namespace}: it is being deleted ({what}): wait until `kubectl get namespace {namespace}` "
                       f"answers NotFound (stuck Terminating: `kubectl get namespace {namespace} -o yaml` shows what "
                       f"holds it), then run again, or use another namespace (PODTAX_RUNNER_NAMESPACE, or the test's "
                       f"`namespace`)")
    if exc.status == 404 and f'namespaces "{namespace}" not found' in words:
        if refused:
            return Aborted("kubernetes-error", f"namespace {namespace} does not exist ({what}) and the runner's "
                           f"account may not create it ({refused}): create it (`kubectl create namespace "
                           f"{namespace}`), then run again")
        return Aborted("kubernetes-error", f"namespace {namespace} was deleted while the run was in flight, by another "
                       f"client ({what}): run again once nothing deletes it (the run creates it)")
    return None


# a run's own calls (kubeapi.Kube.call notes the client function on a refusal), as its refusal names them
OWN_CALLS = {"list_storage_class": "the list of storage classes (GET /apis/storage.k8s.io/v1/storageclasses)",
             "create_namespace": "the creation of namespace {ns} (POST /api/v1/namespaces)",
             "list_persistent_volume": "the list of persistent volumes (GET /api/v1/persistentvolumes)",
             "list_namespaced_persistent_volume_claim": "the list of the run's claims (GET "
             "/api/v1/namespaces/{ns}/persistentvolumeclaims)",
             "list_namespaced_pod": "the list of the run's pods (GET /api/v1/namespaces/{ns}/pods)"}


def refusal(exc: ApiException, host: str, namespace: str, created: bool = False) -> Aborted:
    """The end of a run whose own call (or, not_allowed, an object's) the API refused with `exc`, in one line with
    the server's message: `kubernetes-forbidden` naming what to grant (a create RBAC refused failed its object
    until 11 of them had: "the API refused 11 of 20 requests (last: create: 403 Forbidden)", and a refused list of
    PVs escaped as executor-error with the client's multi-line dump), else `kubernetes-error` naming the call, how
    often it was sent, whether the run had `created` anything and what to do (it said the server's words only)."""
    what = brief(exc)
    if exc.status == 401:
        return Aborted("kubernetes-forbidden", f"the Kubernetes API at {host} does not accept the runner's "
                       f"credentials ({what}): renew them in its kubeconfig (PODTAX_RUNNER_KUBECONFIG)")
    if not_allowed(exc):
        return Aborted("kubernetes-forbidden", f"the Kubernetes API at {host} refused the run ({what}): grant the "
                       f"account of the runner's kubeconfig (PODTAX_RUNNER_KUBECONFIG, or its service account in the "
                       f"cluster) {GRANTS.format(ns=namespace)}")
    call = OWN_CALLS.get(getattr(exc, "podtax_call", ""), "the run's request").format(ns=namespace)
    sent = getattr(exc, "podtax_sent", 1)
    if transient(exc):
        how = f"sent {sent} times" if sent > 1 else "sent once"
        fix = "check that the API server is healthy (`kubectl get --raw='/readyz?verbose'`), then run again"
    else:
        how = "not sent again: it would not help"
        fix = "the API will refuse it again as it is: check that the runner's kubeconfig (PODTAX_RUNNER_KUBECONFIG) " \
              "names the cluster meant"
    done = "it had created objects, deleted since (what stayed is said at the end)" if created \
        else "nothing was created"
    return Aborted("kubernetes-error", f"the Kubernetes API at {host} refused {call} ({what}; {how}): {done}; {fix}")


@dataclass
class Context:
    run: events.RunSpec
    namespace: str
    deadline: float  # time.monotonic() when the run must be over (delete phase included)
    stop: threading.Event = field(default_factory=threading.Event)
    simulated: bool = False
    # the API has not been reached for a stall window (Kube.down: a watch or poll that keeps being refused): why
    api_down: Callable[[float], Aborted | None] = lambda _grace_s: None
    # close and list again the run's watches that delivered nothing (no event, no bookmark) for the given seconds:
    # True when one was (kubeapi.resync; a wait asks before it gives objects up or lets the run time out)
    resync: Callable[[float], bool] = lambda _quiet_s: False
    attempt: str = field(default_factory=lambda: uuid.uuid4().hex)  # this execution's ANNOTATION_ATTEMPT

    @property
    def label(self) -> str:
        return run_label(self.run.run_id)

    def labels(self) -> dict[str, str]:
        return {**MANAGED, LABEL_KIND: KIND, LABEL_CAMPAIGN: self.run.campaign[:63], LABEL_RUN: self.label}

    def annotations(self) -> dict[str, str]:
        return {ANNOTATION_ATTEMPT: self.attempt}

    @property
    def selector(self) -> str:
        return f"{LABEL_RUN}={self.label}"

    def name(self, kind: str, i: int) -> str:
        return object_name(kind, self.run.campaign, self.run.run_id, i)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def stall_s(self) -> float:
        """The shortest a wait goes on without progress before it gives up on its stragglers (wait_for): a
        tenth of the run's timeout, at least 1 s; wait_for waits longer (patience) unless the run's end is
        that close."""
        return max(1.0, self.run.timeout_s / 10)

    def check(self) -> None:
        """Raise Aborted when stopped, the API unreachable for the stall window, or past the deadline."""
        if self.stop.is_set():
            raise Aborted("stopped", "the run was stopped before its next object (its campaign cancelled, SIGTERM or "
                          "shutdown) and what it created deleted")
        if (down := self.api_down(self.stall_s)) is not None:
            raise down
        if self.remaining() <= 0:
            raise Aborted("timeout", f"the run did not finish within {self.run.timeout_s:g} s")


def selector(campaign: str | None = None) -> str:
    """Label selector of every control-plane object podtax created (of one campaign)."""
    return f"{LABEL_KIND}={KIND}" + (f",{LABEL_CAMPAIGN}={campaign[:63]}" if campaign else "")


def pool(ctx: Context, fn: Callable[[T], Any], items: Iterable[T], workers: int) -> None:
    """Run fn over items with `workers` threads; stops handing out work once the run is stopped."""
    lock = threading.Lock()
    it = iter(items)
    errors: list[BaseException] = []

    def worker() -> None:
        while not ctx.stop.is_set() and ctx.remaining() > 0 and not errors:
            with lock:
                item = next(it, None)
            if item is None:
                return
            try:
                fn(item)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                errors.append(exc)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="podtax-cp") as ex:
        for f in [ex.submit(worker) for _ in range(workers)]:
            f.result()
    if errors:
        raise errors[0]
    ctx.check()


GIVE_UP_FLOOR_S = 10.0  # a wait gives up on its stragglers after at least this long without progress,
GIVE_UP_FACTOR = 3.0  # and at least this many times the slowest object of that wait so far


def patience(ctx: Context, slowest: float) -> float:
    """How long a wait goes on without progress before its stragglers count as stuck: the longest of the
    stall window, GIVE_UP_FLOOR_S and GIVE_UP_FACTOR times the slowest object the wait saw get through
    (`slowest`, seconds from the wait's start). A straggler slower than the other objects but not stuck
    is then timed (an audit: at timeout 20, claims planted to bind after 5 s were given up at 2.5 s, p99
    550 ms and 2 errors, where timeout 60 timed them: p99 5,036 ms)."""
    return max(ctx.stall_s, GIVE_UP_FLOOR_S, GIVE_UP_FACTOR * slowest)


def poll_safely(round_: Callable[[], None]) -> None:
    """One polling round; a failed round is logged and the next one tries again."""
    try:
        round_()
    except Exception as exc:  # noqa: BLE001 - transient API trouble must not end the poller
        log.warning("poll round failed: %s: %s", type(exc).__name__, exc)


def allowance(count: int) -> int:
    """How many of a run's `count` objects may fail before the run is aborted: max(10, 10 %)."""
    return max(10, count // 10)


def too_many_errors(errors: int, count: int) -> bool:
    """Abort a run once more than max(10, 10 %) of its objects failed, or all of them (count 10 or fewer: such a run
    ended 'done', exit 0, with nothing timed): the server is refusing, or not answering."""
    return errors > allowance(count) or errors >= count


def too_many_failed(api: str, failures: Counter[str], count: int, last: str) -> Aborted | None:
    """The end of a run once more than max(10, 10 %) of its `count` objects failed a call (too_many_errors), worded
    by what `api` did: `failures["refused"]` calls were answered with a refusal (4xx, 5xx) or broke, reason
    api-errors; `failures["unanswered"]` got no answer in time and gave their objects up as lower bounds (an API that
    hung mid-run ended as "the API refused 11 of 20 requests", which it had not), reason api-no-answer when no call
    was refused. `failures["leftover"]`: objects failed unsent, found left by an earlier run (Nomad's), counted
    against the allowance and said apart. None while within the allowance."""
    refused, unanswered, leftover = failures["refused"], failures["unanswered"], failures["leftover"]
    if not too_many_errors(refused + unanswered + leftover, count):
        return None
    last += (f"; also {leftover} object(s) not created, not sent: they exist already, left by an earlier run (said in "
             "each one's error)") if leftover else ""
    if not unanswered:
        return Aborted("api-errors", f"{api} refused {refused} of {count} requests (last: {last}); stopped, "
                       "deleting what it created", call=last.split(":")[0])
    did = f"refused {refused} and did not answer {unanswered}" if refused else f"did not answer {unanswered}"
    return Aborted("api-errors" if refused else "api-no-answer",
                   f"{api} {did} of {count} requests in time (the {unanswered} unanswered were given up as lower "
                   f"bounds; last: {last}): is it overloaded, or stopped? The run stopped, deleting what it created")


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
