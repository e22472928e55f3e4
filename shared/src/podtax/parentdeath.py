"""A child of `podtax up` that stops when `up` dies. The children run in sessions of their own (so a Ctrl-C in the
terminal reaches `up` alone, which stops them in order); `up` killed (SIGKILL, the OOM killer) then left every one of
them running (hF, session 56): nats-server kept the port and the store, the analyzer the DuckDB file, and a new
`podtax up` on the data dir was refused ('--nats-port 4222: 127.0.0.1:4222 is in use (by another program or
another podtax up); choose another port'), a fix that leads to the next refusal. Linux's parent-death signal asks the
kernel to send each child SIGTERM when `up` goes: each stops as on `up`'s own SIGTERM (what is acked is stored)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def sigterm_with(parent: int) -> Callable[[], None] | None:
    """A preexec_fn for subprocess.Popen: the child gets SIGTERM when the process `parent` (the caller, which must
    start it from its main thread: the signal follows the thread that forked) ends; None where Linux's prctl is
    not."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def arm() -> None:  # in the child, between fork and exec: no allocation-heavy work, no locks
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # `up` died before the signal was armed
            os.kill(os.getpid(), signal.SIGTERM)

    return arm
