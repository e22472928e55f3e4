"""Retries of Kubernetes API calls, with tenacity: transient errors only (429, 5xx, status 0 and
connection errors, which urllib3 raises as OSError subclasses), exponential backoff, the last
error re-raised as it was. Every other error (400, 403, 404, 409 ...) surfaces at once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from kubernetes.client.exceptions import ApiException
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

T = TypeVar("T")
RETRYABLE = frozenset({0, 429, 500, 502, 503, 504})
log = logging.getLogger("podtax.runner.retry")


def transient(exc: BaseException) -> bool:
    """Worth trying again: the server was busy or unreachable, not the request wrong."""
    if isinstance(exc, ApiException):
        return exc.status is None or exc.status in RETRYABLE
    return isinstance(exc, OSError)


def call(fn: Callable[[], T], what: str, *, attempts: int = 5, first_s: float = 0.5, factor: float = 2,
         max_s: float = 8, retry_on: Callable[[BaseException], bool] = transient) -> T:
    """`fn()`, tried up to `attempts` times with waits first_s, first_s*factor, ... (at most max_s), while
    the error is one `retry_on` accepts (Kubernetes' transient ones by default)."""

    def say(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning("%s: %s; retrying in %.2f s", what, exc, state.next_action.sleep if state.next_action else 0)

    retrying = Retrying(retry=retry_if_exception(retry_on), stop=stop_after_attempt(attempts),
                        wait=wait_exponential(multiplier=first_s, exp_base=factor, max=max_s),
                        before_sleep=say, reraise=True)
    return retrying(fn)
