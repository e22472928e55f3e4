"""A real nats-server started with a configuration file (users, TLS) of the test's own."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from podtax import natsserver


@contextlib.contextmanager
def configured_nats(folder: Path, conf: str) -> Iterator[natsserver.NatsServer]:
    """nats-server reading `conf` (written to folder/nats.conf) first, its store folder/js, its log folder/nats.log;
    stopped on exit."""
    (folder / "nats.conf").write_text(conf)
    server = natsserver.start(folder / "js", log_file=folder / "nats.log", config=folder / "nats.conf")
    try:
        yield server
    finally:
        server.stop()
