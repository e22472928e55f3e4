"""bench/bench_doors.py, the cost of NATS permissions and kubesim's token, runs to its figures under the roles'
permissions: it purged the stream between rounds as the runner user, which no service user may do since the
roles were closed (stop 31), so `make bench` stopped there with a traceback and no later bench ran. Tiny sizes:
this checks that the bench works, not its figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_doors.py"


def test_bench_doors_prints_both_ratios() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--events", "300", "--pods", "10"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("ratio closed/open x") == 2, done.stdout
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
