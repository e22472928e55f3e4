"""podtax.kubeclient.at_most_every: the client's credential refresh runs at most once an interval, and the refresh,
which sets the configuration's hook to itself again, finds the throttled one put back (else the second request
would run the bare refresh every time). A clock of our own, so no test waits."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace
from typing import Any

import pytest
from podtax import kubeclient


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [100.0]
    monkeypatch.setattr(kubeclient, "time", SimpleNamespace(monotonic=lambda: now[0]))
    return now


def _config() -> tuple[SimpleNamespace, list[float]]:
    """A configuration whose refresh, as the kubernetes client's, records its call and sets the hook to itself."""
    calls: list[float] = []

    def refresh(cfg: Any) -> None:
        calls.append(kubeclient.time.monotonic())
        cfg.refresh_api_key_hook = refresh

    return SimpleNamespace(refresh_api_key_hook=refresh), calls


def test_the_hook_runs_at_most_once_an_interval(clock: list[float]) -> None:
    cfg, calls = _config()
    hook = kubeclient.at_most_every(1.0, cfg.refresh_api_key_hook)
    for t in (100.0, 100.5, 100.99, 101.0, 101.5, 103.0):
        clock[0] = t
        hook(cfg)
    assert calls == [100.0, 101.0, 103.0]


def test_the_refresh_finds_its_throttled_hook_put_back(clock: list[float]) -> None:
    cfg, calls = _config()
    kubeclient.refresh_at_most_every(cfg)
    throttled = cfg.refresh_api_key_hook
    for t in (100.0, 100.1, 100.2, 101.5):
        clock[0] = t
        cfg.refresh_api_key_hook(cfg)  # as the client calls it before each request
        assert cfg.refresh_api_key_hook is throttled
    assert calls == [100.0, 101.5]


def test_a_configuration_without_a_refresh_is_left_as_it_is() -> None:
    cfg = SimpleNamespace(refresh_api_key_hook=None)
    kubeclient.refresh_at_most_every(cfg)
    assert cfg.refresh_api_key_hook is None


@pytest.mark.parametrize("body, said", [
    ('{"kind": "Status", "message": " pods \\"p\\" is forbidden "}', 'pods "p" is forbidden'),
    (b'{"kind": "Status", "message": "quota \xff exceeded"}', "quota \ufffd exceeded"),  # bytes, not UTF-8
    ("upstream connect error", ""), ('["a list"]', ""), ('{"kind": "Status"}', ""), (None, ""), (b"", ""),
])
def test_status_message_is_the_status_bodys_message_or_nothing(body: str | bytes | None, said: str) -> None:
    """The one reading of a Status body that the runner's retry.message and the scheduler's api_problem share."""
    assert kubeclient.status_message(body) == said


def test_watch_event_reads_a_line_of_a_watch_stream() -> None:
    """The one reading of a watch line that the runner's Watcher and the scheduler's Informer share."""
    pod = {"metadata": {"name": "p", "resourceVersion": "12"}}
    assert kubeclient.watch_event(b'{"type": "ADDED", "object": {"metadata": {"name": "p", "resourceVersion": "12"}}}',
                                  "7") == ("ADDED", pod, "12")
    assert kubeclient.watch_event('{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "40"}}}', "12") \
        == ("BOOKMARK", {"metadata": {"resourceVersion": "40"}}, "40")
    assert kubeclient.watch_event('{"type": "MODIFIED", "object": {"metadata": {}}}', "12") == \
        ("MODIFIED", {"metadata": {}}, "12")  # no version: resume from the last one
    assert kubeclient.watch_event(b"", "12") is None


@pytest.mark.parametrize("status, raised, said", [
    ({"code": 410, "message": "too old resource version: 5 (9)"}, kubeclient.WatchGone,
     "too old resource version: 5 (9)"),
    ({"code": 410}, kubeclient.WatchGone, "410 Gone"),
    ({"code": 500, "message": "etcd down"}, RuntimeError, "watch error: etcd down"),
])
def test_an_error_event_raises(status: dict, raised: type[Exception], said: str) -> None:
    with pytest.raises(raised) as err:
        kubeclient.watch_event(json.dumps({"type": "ERROR", "object": {"kind": "Status", **status}}), "12")
    assert str(err.value) == said


@pytest.mark.parametrize("line, shown", [
    (b"not json", "b'not json'"),  # was JSONDecodeError: Expecting value: line 1 column 1 (char 0)
    (b"\xff\xfe", "b'\\xff\\xfe'"),  # was UnicodeDecodeError
    ("[1]", "'[1]'"),  # was AttributeError: 'list' object has no attribute 'get'
    (b"null", "b'null'"),
    (b'{"type": "ADDED", "object": [1]}', """b'{"type": "ADDED", "object": [1]}'"""),
    ("x" * 200, repr("x" * 80)),  # its start only
    ('{"type": "ADDED", "object": {"metadata": [1]}}', repr('{"type": "ADDED", "object": {"metadata": [1]}}')),
    ('{"type": "ERROR", "object": []}', repr('{"type": "ERROR", "object": []}')),  # was 'watch error: {}'
    ('{"type": "ADDED", "object": 0}', repr('{"type": "ADDED", "object": 0}')),
])
def test_a_line_that_is_no_json_event_raises_naming_the_stream_and_the_line(line: str | bytes, shown: str) -> None:
    with pytest.raises(ValueError) as err:
        kubeclient.watch_event(line, "12")
    assert str(err.value) == f"watch stream: not a JSON event: {shown}"


def test_follow_watch_hands_on_events_not_bookmarks_until_the_end_or_stop() -> None:
    lines = [b'{"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "8"}}}', b"",
             b'{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}',
             b'{"type": "DELETED", "object": {"metadata": {"name": "a", "resourceVersion": "10"}}}']
    got: list[tuple[str, str]] = []
    heard: list[int] = []
    stop = threading.Event()
    rv = kubeclient.follow_watch(lines, "7", stop, lambda t, o: got.append((t, o["metadata"]["name"])),
                                 on_line=lambda: heard.append(1))
    assert (rv, got, len(heard)) == ("10", [("ADDED", "a"), ("DELETED", "a")], 4)  # the empty line heard too

    def stop_after(etype: str, obj: dict) -> None:
        got.append((etype, obj["metadata"]["name"]))
        stop.set()

    got.clear()
    stop.clear()
    assert kubeclient.follow_watch(lines, "7", stop, stop_after) == "8"  # stopped: resumes from there
    assert got == [("ADDED", "a")]
    with pytest.raises(kubeclient.WatchGone):
        kubeclient.follow_watch([*lines[:1], b'{"type": "ERROR", "object": {"code": 410}}'], "7", threading.Event(),
                                lambda t, o: None)
