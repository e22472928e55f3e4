"""Usage mistakes through the scripts run as `python tools/X.py` and `python bench/X.py`: one line on stderr
(`<prog>: <error>. Try '<prog> --help'.`), exit 2, no traceback. They used plain argparse: its usage block and the
error, two or three lines; template_sweep's `--only nope` swept nothing ("0 combinations", exit 0) and its
`--timeout -1` was taken (sweep hU). The benches are run with a bad option only: they refuse it before any work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
BENCHES = sorted(p.name for p in (ROOT / "bench").glob("*.py") if "ArgumentParser(" in p.read_text()
                 or "OneLineParser(" in p.read_text())

TOOLS = [
    # script, argv, a fragment the one line must contain
    ("tools/template_sweep.py", ["--bogus"], "unrecognized arguments: --bogus"),
    ("tools/template_sweep.py", ["--only", "nope"], "--only: unknown template nope; use some of: fio,"),
    ("tools/template_sweep.py", ["--only", "fio,nope"], "unknown template nope;"),
    ("tools/template_sweep.py", ["--timeout", "-1"], "--timeout: '-1': give a finite number of seconds, more than 0"),
    ("tools/template_sweep.py", ["--timeout", "0"], "more than 0"),
    ("tools/template_sweep.py", ["--timeout", "nan"], "give a finite number of seconds"),
    ("tools/template_sweep.py", ["--timeout", "x"], "'x' is not a number of seconds"),
    ("tools/template_sweep.py", ["--slack", "-1"], "--slack: '-1': give a finite number of seconds, 0 or more"),
    ("tools/check_debian_pins.py", ["--bogus"], "unrecognized arguments: --bogus"),
    *((f"bench/{name}", ["--no-such-option"], "unrecognized arguments: --no-such-option")
      for name in BENCHES if name != "pipeline_floor.py"),
    ("bench/pipeline_floor.py", ["--no-such-option"], "the following arguments are required: role, url, path"),
]


def test_the_benches_with_options_are_all_here() -> None:
    assert len(BENCHES) > 20, BENCHES


@pytest.mark.parametrize(("script", "argv", "said"), TOOLS, ids=[f"{s} {' '.join(a)}" for s, a, _ in TOOLS])
def test_a_usage_mistake_is_one_line_and_exit_2(script: str, argv: list[str], said: str) -> None:
    # without the installed packages' own import-time deprecation warnings (fastapi's testclient's): not the script's
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, script, *argv], cwd=ROOT, capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    prog = Path(script).name.removesuffix(".py") if script.endswith("check_debian_pins.py") else Path(script).name
    assert lines[0].startswith(f"{prog}: "), lines[0]
    assert said in lines[0], lines[0]
    assert lines[0].endswith(f"Try '{prog} --help'."), lines[0]
