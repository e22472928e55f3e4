"""Kubernetes API retries (tenacity): transient errors are retried with backoff, others surface at once."""

from __future__ import annotations

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
