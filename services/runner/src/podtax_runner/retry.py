"""Retries of Kubernetes API calls, with tenacity: transient errors only (429, 5xx, status 0 and
connection errors, which urllib3 raises as OSError subclasses), exponential backoff, the last
error re-raised as it was. Every other error (400, 403, 404, 409 ...) surfaces at once."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import TypeVar

from kubernetes.client.exceptions import ApiException
from podtax.kubeclient import retry_after_s, status_message
from tenacity import RetryCallState, Retrying, retry_if_exception, wait_exponential

T = TypeVar("T")
RETRYABLE = frozenset({0, 429, 500, 502, 503, 504})
RETRY_AFTER_MAX_S = 10.0  # the longest a server's Retry-After is followed (a real API server's 429 says 1 s)
log = logging.getLogger("podtax.runner.retry")


def transient(exc: BaseException) -> bool:
    """Worth trying again: the server was busy or unreachable, not the request wrong."""
    if isinstance(exc, ApiException):
        return exc.status is None or exc.status in RETRYABLE
    return isinstance(exc, OSError)


def message(exc: ApiException) -> str:
    """The server's words of a refusal: its Status's message, at most 300 characters; else the body on one line, at
    most 200 (a proxy's HTML page, nginx's 502: its lines were the error's, an object's and the abort's)."""
    return status_message(exc.body)[:300] or " ".join(str(exc.body or "").split())[:200]


def brief(exc: BaseException | None) -> str:
    """An error in one line: a Kubernetes refusal as '429 Too Many Requests: <its message>' (the client's own text
    is several lines: status, reason, every header and the body), another error's first line."""
    if isinstance(exc, ApiException):
        said = message(exc)
        return f"{exc.status} {exc.reason}" + (f": {said}" if said else "")
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def retry_after(exc: BaseException | None) -> float:
    """The seconds an answer asks to wait (a Kubernetes 429 or 5xx: podtax.kubeclient.retry_after_s; at most
    RETRY_AFTER_MAX_S), 0 when it names none or not in seconds."""
    return min(RETRY_AFTER_MAX_S, max(0.0, retry_after_s(exc) or 0.0))


def did_nothing(exc: BaseException) -> bool:
    """An answer that says the request was refused before anything was done: 429 (a rate limiter, the API server's
    max-in-flight or priority-and-fairness filters), or 503 with Retry-After (a server that asks to come back). A
    500, 502, 504 or a broken connection may come after the request took effect (a proxy's 504 after the delete went
    through): it does not say."""
    status = getattr(exc, "status", None)
    return status == 429 or (status == 503 and retry_after(exc) > 0)


class Late(TimeoutError):
    """A call sent again would start past its deadline (`call`'s `by`): it fails as a call that got no answer by
    then, the last refusal its cause."""


def call(fn: Callable[[], T], what: str, *, attempts: int = 5, first_s: float = 0.5, factor: float = 2,
         max_s: float = 8, retry_on: Callable[[BaseException], bool] = transient,
         again: Callable[[BaseException], None] | None = None, by: float | None = None,
         patient: Callable[[BaseException], bool] | None = None, patient_attempts: int = 10) -> T:
    """`fn()`, tried up to `attempts` times with waits first_s, first_s*factor, ... (at most max_s), or the
    answer's Retry-After when longer (an API server that throttles says when to come back: sooner, every attempt
    met the same 429), while the error is one `retry_on` accepts (Kubernetes' transient ones by default).
    `again(error)` is called just before each attempt after the first (a timed call re-times itself).
    `by`: a time.monotonic() deadline (a run's, a cleanup delete's share): no wait goes past it, and no attempt is
    sent again once it is reached: Late is raised then (a Retry-After of 10 s held a run with a 3 s timeout 22 s).
    `patient(error)`: an answer that did nothing (did_nothing: a throttling 429) is tried up to `patient_attempts`
    times in all, within `by` (client-go retries up to 10 times on Retry-After; 3 attempts failed a DELETE throttled
    3 times in a row, which urllib3 had re-sent up to 4 times an attempt)."""
    cut = [False]  # the wait was cut to the deadline: no attempt after it

    def say(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        sleep = state.next_action.sleep if state.next_action else 0
        if cut[0]:
            log.warning("%s: %s; its deadline comes first (in %.2f s): not sent again", what, brief(exc), sleep)
        else:
            log.warning("%s: %s; retrying in %.2f s", what, brief(exc), sleep)

    backoff = wait_exponential(multiplier=first_s, exp_base=factor, max=max_s)

    def wait(state: RetryCallState) -> float:
        asked = max(backoff(state), retry_after(state.outcome.exception() if state.outcome else None))
        left = math.inf if by is None else max(0.0, by - time.monotonic())
        cut[0] = asked >= left
        return min(asked, left)

    def stop(state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        most = patient_attempts if patient is not None and exc is not None and patient(exc) else attempts
        return state.attempt_number >= most or (by is not None and time.monotonic() >= by)

    failed: list[BaseException] = []

    def attempt() -> T:
        if failed and (cut[0] or (by is not None and time.monotonic() >= by)):
            raise Late(f"{what}: no time left before its deadline to send it again (last: {brief(failed[-1])})") \
                from failed[-1]
        if again is not None and failed:
            again(failed[-1])
        try:
            return fn()
        except BaseException as exc:
            failed.append(exc)
            raise

    retrying = Retrying(retry=retry_if_exception(retry_on), stop=stop, wait=wait,
                        before_sleep=say, reraise=True)
    return retrying(attempt)
