"""Shared fixtures: a real nats-server on a free port with a temporary JetStream directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax import natsserver

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "corpus"


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[natsserver.NatsServer]:
    server = natsserver.start(tmp_path / "jetstream", log_file=tmp_path / "nats.log")
    yield server
    server.stop()


@pytest.fixture
def nats_url(nats_server: natsserver.NatsServer) -> str:
    return nats_server.url
