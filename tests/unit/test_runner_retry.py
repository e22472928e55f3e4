"""Kubernetes API retries (tenacity): transient errors are retried with backoff, others surface at once."""

from __future__ import annotations

import time

import pytest
from kubernetes.client.exceptions import ApiException
from podtax_runner import retry


@pytest.mark.parametrize(("exc", "again"), [
    (ApiException(status=429), True),
    (ApiException(status=503), True),
    (ApiException(status=0), True),
    (ConnectionRefusedError(), True),
    (ApiException(status=409), False),
    (ApiException(status=403), False),
    (ApiException(status=404), False),
    (ValueError("bad"), False),
])
def test_transient(exc: BaseException, again: bool) -> None:
    assert retry.transient(exc) is again


def flaky(failures: list[BaseException]):
    calls = []

    def fn() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "ok"

    return fn, calls


def test_transient_errors_are_retried_until_success() -> None:
    fn, calls = flaky([ApiException(status=503), ConnectionResetError()])
    assert retry.call(fn, "test", first_s=0.001, max_s=0.002) == "ok"
    assert len(calls) == 3


def test_a_conflict_surfaces_at_once() -> None:
    fn, calls = flaky([ApiException(status=409)])
    with pytest.raises(ApiException) as info:
        retry.call(fn, "test", first_s=0.001)
    assert info.value.status == 409 and len(calls) == 1


def test_the_last_transient_error_is_reraised_after_the_attempts() -> None:
    fn, calls = flaky([ApiException(status=500)] * 5)
    with pytest.raises(ApiException) as info:
        retry.call(fn, "test", attempts=3, first_s=0.001, max_s=0.002)
    assert info.value.status == 500 and len(calls) == 3


def throttled(status: int = 429, after: str | None = "10") -> ApiException:
    exc = ApiException(status=status, reason="Too Many Requests")
    exc.headers = {"Retry-After": after} if after is not None else {}
    return exc


def test_a_wait_past_the_deadline_is_cut_to_it_and_the_call_is_not_sent_again() -> None:
    """hR F5: the wait a Retry-After asks (10 s) went past the caller's deadline (a run's, a cleanup delete's share);
    it ends at the deadline, and the call fails then as one that got no answer in time (Late, a TimeoutError)."""
    fn, calls = flaky([throttled(), throttled()])
    resent: list[BaseException] = []
    with pytest.raises(retry.Late) as info:
        retry.call(fn, "create", attempts=3, first_s=0.001, again=resent.append, by=time.monotonic() + 0.2)
    assert len(calls) == 1 and resent == [], calls  # before: 3 calls, the third 20 s later, "ok"
    assert isinstance(info.value, TimeoutError) and isinstance(info.value.__cause__, ApiException)
    assert "create: no time left before its deadline to send it again (last: 429 Too Many Requests)" in str(info.value)


def test_a_deadline_leaves_a_wait_that_fits_alone() -> None:
    fn, calls = flaky([throttled(after="0"), throttled(after=None)])
    assert retry.call(fn, "create", attempts=3, first_s=0.001, by=time.monotonic() + 60) == "ok"
    assert len(calls) == 3


@pytest.mark.parametrize(("exc", "nothing"), [
    (throttled(429), True),
    (throttled(429, after=None), True),
    (throttled(503, after="1"), True),
    (throttled(503, after=None), False),  # a 503 without Retry-After: a proxy's, maybe after the call was acted on
    (ApiException(status=500), False),
    (ApiException(status=502), False),
    (ApiException(status=504), False),
    (ConnectionResetError(), False),
])
def test_did_nothing(exc: BaseException, nothing: bool) -> None:
    """Only an answer that says the request was refused before it was acted on lets a retry be re-timed (hR F2)."""
    assert retry.did_nothing(exc) is nothing
