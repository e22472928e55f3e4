"""Off a terminal (a pipe, a log file, make) the CLI's output keeps whole lines: rich wrapped them at 80
columns mid-phrase. The real console script, its stdout a pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from podtax import natsserver

NAME = "a-campaign-name-long-enough-to-pass-eighty-columns"  # 50, the most a name may be


def test_a_long_line_is_not_wrapped_in_a_pipe(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"name: {NAME}\nnodes: [n1]\nenvironments: [host]\ntests:\n  - test: sysbench-cpu\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_") and k != "COLUMNS"}
    env["PODTAX_NATS_URL"] = f"nats://127.0.0.1:{natsserver.free_port()}"  # nobody there: the offline dry run
    proc = subprocess.run([sys.executable, "-m", "podtax.cli.main", "campaign", "submit", str(path), "--dry-run"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"campaign {NAME} is valid, its nodes unchecked: 6 run(s) on 1 node(s) "
                                        "(dry run: nothing submitted)"]
