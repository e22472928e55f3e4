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


# a command that leaves its text buffered at exit (print without flush), written by run()'s last flush
BUFFERED = ("import podtax.cli.main as m; m.main = lambda argv=None: print('x' * 100) or 0; m.run()",)


@pytest.mark.parametrize("argv", [("-m", "podtax", "--version"), ("-m", "podtax", "parse", str(LOG), "--tool", "fio",
                                                                   "--json"), ("-c", *BUFFERED)])
def test_a_reader_gone_is_said_nothing_of(argv):
    """`podtax ... | head`, the reader gone before podtax writes: a reader that has what it wanted is no error to report
    (review r1: text still buffered at exit, written then, said 'cannot write its output: Broken pipe')."""
    import os

    read, write = os.pipe()
    os.close(read)  # every write to the pipe now fails EPIPE
    try:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as a terminal user's
        done = subprocess.run([sys.executable, *argv], stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
                              check=False, env=env)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (1, "")
