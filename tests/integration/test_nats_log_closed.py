"""natsserver.start left its own descriptor of the server's log open after handing it to nats-server, for the
collector to close: a ResourceWarning 'unclosed file .../nats.log' in every test of the nats_server fixture (and in
`podtax up`, which starts it the same way). It is closed once the server has its copy, and the server still writes
to the log, a restarted one after the first's lines."""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

from podtax import natsserver


def test_starting_a_server_with_a_log_leaves_no_file_unclosed(tmp_path: Path) -> None:
    log = tmp_path / "nats.log"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        server = natsserver.start(tmp_path / "js", log_file=log)
        server.stop()
        again = natsserver.start(tmp_path / "js", server.port, log_file=log)
        again.stop()
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert unclosed == []  # fails before: "unclosed file <_io.BufferedWriter name='.../nats.log'>"
    assert log.read_bytes().count(b"Server is ready") == 2
