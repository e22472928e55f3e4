"""`podtax up` with PODTAX_NATS_URL carrying a password (nats://user:password@host): its banner printed the URL
whole, and it wrote the URL into up.json and the --ready-file readable by every local user (0644), beside the
0600 secret files of the same folder (audit hS). The password is now shown as ***, and the files that hold it
are the owner's alone. A real nats-server that needs the password, and the real `podtax up`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from podtax import natsserver

from tests.conftest import wait_until_up

SECRET = "s3cret-Pw-9f7e-up"


def test_up_keeps_a_nats_password_out_of_its_output_and_files(tmp_path: Path) -> None:
    conf = tmp_path / "auth.conf"
    conf.write_text(f'authorization {{ user: "op", password: "{SECRET}" }}\n')
    server = natsserver.start(tmp_path / "js", config=conf)
    data, ready = tmp_path / "data", tmp_path / "ready.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    env["PODTAX_NATS_URL"] = server.url.replace("://", f"://op:{SECRET}@")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(data), "--no-kubesim",
                                 "--api-port", str(natsserver.free_port()), "--node", "up-node",
                                 "--ready-file", str(ready)],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_until_up(proc, ready)
            for path in (data / "up.json", ready):
                assert SECRET in path.read_text()  # the CLI connects with it ...
                assert path.stat().st_mode & 0o077 == 0, f"{path} is readable by others"  # ... its owner alone
        finally:
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=60)
    finally:
        server.stop()
    assert "podtax is up" in out and "op:***@127.0.0.1" in out, out
    assert SECRET not in out, out
    for log in (data / "logs").iterdir():
        assert SECRET not in log.read_text(errors="replace"), log
