"""bench/bench_planted_verdicts.py's usage mistakes: one line and exit 2, never a traceback (r3: no arguments ended in
IndexError, an unknown scenario in KeyError)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_planted_verdicts.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=120)


def test_an_unknown_scenario_is_one_line_and_exit_2():
    out = _run("check", "no such scenario")
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == ("bench_planted_verdicts.py: unknown scenario 'no such scenario'; --list names them "
                                  "(quote names with spaces)")


def test_the_scenarios_are_listed():
    out = _run("--list")
    assert out.returncode == 0 and "null n10" in out.stdout.splitlines(), out.stderr
