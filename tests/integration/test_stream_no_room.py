"""A NATS server whose JetStream has less room than a stream's size limit (PODTAX_NATS_STREAM_MAX_BYTES, 4 GiB by
default, which JetStream reserves on its disk: a host with less free space, a small SD card) refused the stream
with 'insufficient storage resources available', and the runner, its creator, died with that traceback while every
other service waited for the stream; `podtax up` said only that the analyzer did not answer (audit). Now the
service exits 2 with one line naming the limit, the variable and the disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from podtax import natsserver


def test_a_stream_limit_the_server_has_no_room_for_is_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "small.conf"
    conf.write_text("jetstream { max_file_store: 104857600 }\n")  # 100 MiB of file storage
    server = natsserver.start(tmp_path / "js", config=conf)
    try:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")},
               "PODTAX_NATS_URL": server.url, "PODTAX_RUNNER_KUBERNETES": "false"}
        done = subprocess.run([sys.executable, "-m", "podtax_runner"], env=env, capture_output=True, text=True,
                              timeout=60)
    finally:
        server.stop()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "podtax-runner: stream PODTAX: the NATS server has no room for its size limit of 4,294,967,296 bytes "
        "(JetStream reserves a stream's limit on its disk): free space where nats-server keeps JetStream, or lower "
        "PODTAX_NATS_STREAM_MAX_BYTES")
