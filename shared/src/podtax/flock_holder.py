"""Who holds a flock(2) lock on an open file, for a refusal to name it: the kernel's word (Linux: /proc/locks)
first, the PID its holder wrote in the file only when the kernel names none. The file is never removed, so it keeps
the last holder's PID after that one exits (even SIGKILLed), and a new holder rewrites it only after taking the
lock: a refusal in that gap read the old PID, which by then may be an unrelated process's (told to stop it)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PROC_LOCKS = Path("/proc/locks")


def holder(fd: int) -> int | None:
    """The PID holding the flock of the file open as `fd`: the one /proc/locks lists, else (no /proc, or the
    holder let go meanwhile) the one the file names; None if neither says."""
    with contextlib.suppress(OSError):
        if pid := flock_holder(os.fstat(fd), PROC_LOCKS.read_text()):
            return pid
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).decode().strip()) or None
    return None


def flock_holder(st: os.stat_result, locks: str) -> int | None:
    """The PID holding a flock(2) lock on the file `st` describes, in the text of /proc/locks
    (`1: FLOCK  ADVISORY  WRITE 1234 fe:00:2237556 0 EOF`: the device as major:minor in hex, then the inode;
    a waiter's line has `->` before FLOCK and is passed over)."""
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in locks.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == where and fields[4].isdigit():
            return int(fields[4])
    return None
