"""Standard output that cannot be written, at the real entry point (`python -m podtax`): `podtax report --json >
f` on a full disk (/dev/full here) printed a traceback; text still buffered at exit gave Python's "Exception
ignored" and status 120. Now: one line on stderr, status 1. `python -m podtax` itself was "No module named
podtax.__main__"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

LOG = Path(__file__).parents[1] / "corpus" / "debian12-x86_64" / "fio-randread-4k-numjobs2-normal.txt"
FULL = "podtax: cannot write its output: No space left on device\n"


def _podtax(*argv: str, stdout=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "podtax", *argv], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize("argv", [("--version",), ("campaign", "--help"),
                                  ("parse", str(LOG), "--tool", "fio", "--json"), ("parse", str(LOG), "--tool", "fio")])
def test_a_full_standard_output_is_one_line_and_status_1(argv):
    with open("/dev/full", "w") as full:
        done = _podtax(*argv, stdout=full)
    assert (done.returncode, done.stderr) == (1, FULL)


def test_python_dash_m_podtax_is_the_command():
    done = _podtax("export", "x")
    assert done.returncode == 2
    assert done.stderr == "error: give exactly one of --xlsx FILE, --csv DIR or --parquet DIR\n"
