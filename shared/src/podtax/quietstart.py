"""Ctrl-C while a console script is still importing its modules (1-2 s on a busy machine).

The scripts pip writes import the entry point (`from podtax.cli.main import run`) before any handler of podtax's
runs, so a SIGINT then ended in a KeyboardInterrupt traceback out of the import machinery. `install()` (called by
the package's __init__, which every entry point imports first) makes it one line, `<script>: interrupted`, and
status 130, as a Ctrl-C once the command runs; only in the console scripts, never in a program that imports
podtax. `done()` gives Python's own handler back once the command's own handling is in place.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

# podtax-bench, a benchmark's wrapper in pods, keeps Python's handler; podtax-kubesim and -nomadsim import no podtax
SCRIPTS = frozenset({"podtax", "podtax-analyzer", "podtax-host-agent", "podtax-parser", "podtax-runner",
                     "podtax-scheduler"})


def _interrupted(signum: int, frame: FrameType | None) -> None:
    with contextlib.suppress(OSError):  # not print: the signal may have cut short a write to sys.stderr (reentrant)
        os.write(2, f"{Path(sys.argv[0]).name}: interrupted\n".encode())
    raise SystemExit(130)


def install() -> None:
    """SIGINT exits 130 with one line, when this process is one of podtax's console scripts still starting."""
    if (Path(sys.argv[0] if sys.argv else "").name in SCRIPTS and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, _interrupted)


def done() -> None:
    """Python's handler again (KeyboardInterrupt), where install() put its own."""
    if signal.getsignal(signal.SIGINT) is _interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)
