"""How a control-plane run reads a failed API call: timed out, unreachable or refused; what fails one object and
what ends the run (refusal, namespace_lost, too_many_failed), in one line naming the fix."""

from __future__ import annotations

import re
from collections import Counter

import httpx
import urllib3
from kubernetes.client.exceptions import ApiException

from podtax_runner.controlplane.common import Aborted, allowance
from podtax_runner.controlplane.timeline import Timeline
from podtax_runner.retry import brief, transient
from podtax_runner.retry import message as said

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
    against the allowance and said apart. `failures["delete"]`: of the refused and unanswered, those of a delete; the
    end's `call` is `delete` (execute.keep marks the run deletes_refused) only when every failure counted was a
    delete's (review r6: 10 consumers refused and then 1 delete ended a run marked so). None while within the
    allowance."""
    refused, unanswered, leftover = failures["refused"], failures["unanswered"], failures["leftover"]
    if not too_many_errors(refused + unanswered + leftover, count):
        return None
    last += (f"; also {leftover} object(s) not created, not sent: they exist already, left by an earlier run (said in "
             "each one's error)") if leftover else ""
    if not unanswered:
        call = last.split(":")[0] if failures["delete"] in (0, refused + leftover) else "several calls"
        return Aborted("api-errors", f"{api} refused {refused} of {count} requests (last: {last}); stopped, "
                       "deleting what it created", call=call)
    did = f"refused {refused} and did not answer {unanswered}" if refused else f"did not answer {unanswered}"
    return Aborted("api-errors" if refused else "api-no-answer",
                   f"{api} {did} of {count} requests in time (the {unanswered} unanswered were given up as lower "
                   f"bounds; last: {last}): is it overloaded, or stopped? The run stopped, deleting what it created")

