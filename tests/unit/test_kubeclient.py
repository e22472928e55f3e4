"""podtax.kubeclient.at_most_every: the client's credential refresh runs at most once an interval, and the refresh,
which sets the configuration's hook to itself again, finds the throttled one put back (else the second request
would run the bare refresh every time). A clock of our own, so no test waits."""

from __future__ import annotations

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
