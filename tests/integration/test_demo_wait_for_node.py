"""The demo waits for its node once `podtax up` is ready, which it is before the runner has made its key-value
bucket (the analyzer serves first): the bucket not made yet is 'not reported yet', then named, not a traceback.
A real nats-server with the users and permissions `podtax up` generates, no runner."""

from __future__ import annotations

import pytest
from podtax import demo

from tests.integration.secured import secured_fixture  # noqa: F401 - fixture


def test_a_bucket_not_made_yet_is_waited_for_then_named(secured, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    server, users = secured
    monkeypatch.setenv("PODTAX_NATS_URL", server.url.replace("://", f"://cli:{users['cli']}@", 1))
    with pytest.raises(SystemExit) as stop:
        demo.wait_for_node("node-1", timeout=1.5)
    message = str(stop.value)
    assert message.startswith("node node-1 was not reported by the host agent and the emulator within 2 s (")
    assert "podtax-runner" in message  # why: the bucket's creator has not made it
