"""An object's error and a `retried` entry are a server's words, cut to 300 (160, 200) characters; but in the raw-log
event they are a JSON string inside a JSON string, where a quote takes 4 bytes and a character beyond ASCII 7 to 14
(`\\uXXXX`, escaped again). dispatch.log_bytes bounds each error by ERROR_BYTES and each resend by RETRY_BYTES, and a
run's refusal before anything is made rests on that: 300 characters of such words took up to 4,200 bytes. Each is
now cut by what it takes in the event as the runner publishes it (dispatch._run)."""

from __future__ import annotations

import pytest
from podtax import events
from podtax_runner.controlplane import dispatch
from podtax_runner.controlplane.timeline import HELD, Timeline

from tests.controlplane.conftest import spec

WORDS = ['pods "x" is forbidden: ' + '"' * 400, "é" * 400, "\U0001f600" * 400, "\x01" * 400, "a" * 400]


def event_bytes(tl: Timeline) -> int:
    run = spec("volume-churn", count=1)
    raw = events.RawLog(run=run, stdout=tl.jsonl(), exit_code=0, started_at=events.now(), ended_at=events.now())
    return len(events.encode(events.raw_log(raw, dispatch.SOURCE).model_copy(update={"id": f"{run.run_id}.log"})))


def timeline() -> Timeline:
    tl = Timeline("volume-churn", "kubernetes", {"count": 1}, "watch")
    tl.add("pvc-1")
    tl.mark("pvc-1", "create_requested")
    return tl


@pytest.mark.parametrize("words", WORDS, ids=["quotes", "accents", "emoji", "control", "ascii"])
def test_an_error_takes_no_more_than_error_bytes_in_the_event(words: str) -> None:
    plain, failed = timeline(), timeline()
    failed.fail("pvc-1", words)
    assert failed.objects["pvc-1"].error  # kept, if cut
    assert event_bytes(failed) - event_bytes(plain) <= dispatch.ERROR_BYTES


@pytest.mark.parametrize("words", WORDS, ids=["quotes", "accents", "emoji", "control", "ascii"])
@pytest.mark.parametrize("point", [None, "create_requested"], ids=["held", "re-timed"])
def test_a_resend_takes_no_more_than_retry_bytes_in_the_event(words: str, point: str | None) -> None:
    plain, sent = timeline(), timeline()
    sent.resend("pvc-1", point, words)
    assert sent.retried["pvc-1"].endswith(f"({HELD})") == (point is None)
    assert event_bytes(sent) - event_bytes(plain) <= dispatch.RETRY_BYTES


@pytest.mark.parametrize("words", WORDS, ids=["quotes", "accents", "emoji", "control", "ascii"])
@pytest.mark.parametrize("retimed", [(), ("create",), ("delete",), ("create", "delete")],
                         ids=["held", "create-re-timed", "delete-re-timed", "both-re-timed"])
def test_an_object_whose_three_calls_were_sent_again_takes_no_more_than_retry_bytes(
        words: str, retimed: tuple[str, ...]) -> None:
    """Its create, its consumer's create and its delete each keep a reason (review r14): a list sharing one reason's
    bytes, under a run's object name (34 characters)."""
    name, starts = "podtax-vc-3f81e91d-127d8c9690-0001", {"create": "request_sent", "delete": "delete_requested"}

    def made() -> Timeline:
        tl = Timeline("volume-churn", "kubernetes", {"count": 1}, "watch")
        tl.add(name)
        for point in starts.values():
            tl.mark(name, point)
        return tl

    plain, sent = made(), made()
    for call in ("create", "create consumer", "delete"):
        sent.resend(name, starts[call] if call in retimed else None, f"{call}: {words}")
    assert len(sent.retried[name]) == 3, sent.retried
    assert event_bytes(sent) - event_bytes(plain) <= dispatch.RETRY_BYTES
