"""A child of `podtax up` that stops when `up` dies. The children run in sessions of their own (so a Ctrl-C in the
terminal reaches `up` alone, which stops them in order); `up` killed (SIGKILL, the OOM killer) then left every one of
them running (hF, session 56): nats-server kept the port and the store, the analyzer the DuckDB file, and a new
`podtax up` on the data dir was refused ('--nats-port 4222: 127.0.0.1:4222 is in use (by another program or
another podtax up); choose another port'), a fix that leads to the next refusal. Linux's parent-death signal asks the
kernel to send each child SIGTERM when `up` goes: all stop at once, nats-server included (a service may log that
NATS went away as it stops).

The kernel sends it when the THREAD that started the child ends, not the process: a child started from a worker
thread (asyncio.to_thread) would be stopped when that thread ends, `up` still running. So it is armed only for a
child started from the main thread; start the children from the main thread."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def sigterm_with(parent: int) -> Callable[[], None] | None:
    """A preexec_fn for subprocess.Popen: the child gets SIGTERM when the process `parent` (the caller) ends; None
    where Linux's prctl is not, or when called from another thread than the main thread (the signal follows the
    thread that forked: it would come when that thread ends)."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def arm() -> None:  # in the child, between fork and exec: no allocation-heavy work, no locks
        # the caller's own SIGTERM handler (up's _stop) is inherited until exec: it would swallow the signal (the
        # child ran on, an orphan, when up died before prctl: rF, session 56); exec resets a caught signal anyway
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # `up` died before the signal was armed: end as a SIGTERM would (128 + 15)
            os._exit(143)

    return arm
