"""RETRIED gives a held call no wait (review r7): a runner before the fix kept the time of a create answered 429
(re-timed, `first_request_sent` kept) and then 500 (held, `timed from the first attempt`) from its second attempt,
and the flag read 'create: 500 ... (timed from the first attempt ...), sent again 1.00 s after the first attempt':
both a wait and no wait. Such stored timelines, reparsed, name the held call without one; a re-timed call keeps its
wait."""

from __future__ import annotations

import pytest
from podtax.parsers import parse_run

from tests.parsers.test_timeline import header, lines, obj, summary

HELD = "timed from the first attempt: its phases hold the wait"
T = {"request_sent": 1.0, "api_accepted": 1.01, "pv_created": 1.1, "bound": 1.2, "delete_requested": 2.0,
     "gone": 2.05, "pv_gone": 2.1}


def _flag(t: dict[str, float], retried: str | list[str]) -> str:
    text = lines(header(), obj("a", t), obj("b", dict(T)), summary(retried={"a": retried}))
    flag, = [f for f in parse_run("volume-churn", text).flags if f.startswith("RETRIED: ")]
    return flag


@pytest.mark.parametrize("retried", [f"create: 500 Internal Server Error ({HELD})",
                                     ["create: 500 Internal Server Error (timed from the first attempt)",
                                      "delete: 429 Too Many Requests"]])
def test_a_held_call_whose_earlier_429_re_timed_it_gets_no_wait(retried: str | list[str]) -> None:
    flag = _flag({**T, "first_request_sent": 0.0}, retried)  # the old runner's: 429 re-timed it, then 500 held it
    assert "create: 500 Internal Server Error (timed from the first attempt" in flag, flag
    assert "sent again 1.00 s after the first attempt" not in flag, flag  # before: after the held reason


def test_a_re_timed_call_keeps_its_wait() -> None:
    flag = _flag({**T, "first_request_sent": 0.0}, "create: 429 Too Many Requests")
    assert "(first: a: create: 429 Too Many Requests, sent again 1.00 s after the first attempt); 1 timed" in flag, flag
