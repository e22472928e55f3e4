"""One analyzer per DuckDB file: an exclusive lock on a file beside it (`<db>.lock`), taken before anything
looks at the database file and held until the analyzer has closed it.

Two analyzers starting at once on the same empty file raced: each removes an empty file a failed first start left
(service.empty_left), so one could remove the file the other's DuckDB had just created (still 0 bytes) and create
its own: two analyzers, each writing a database of its own, one of them no longer at the path. DuckDB's own lock is
taken only as it opens the file, after that check. The lock here is flock(2): released by the kernel when its
holder exits, however it ends, so a stale lock file is harmless; the file is left in place (removing it would let a
third process lock a new file while the second still holds the old one). It holds the holder's PID, for the
refusal to name it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path


class Held(Exception):
    """Another process holds the lock; the message says which and what to do (open_problem's form)."""


def lock_path(db: Path) -> Path:
    return Path(f"{db}.lock")


class DbLock:
    """The lock of one database file, held from construction until `release`."""

    def __init__(self, db: Path) -> None:
        """Take the lock of `db` (creating its folder and lock file as needed); raises Held if another process
        holds it, OSError if the lock file cannot be made."""
        self.path = lock_path(db)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(self._fd)
            self.release()
            who = f"PID {holder}" if holder else "its PID not yet written"
            raise Held(f"another analyzer holds it ({who}; lock file {self.path}): only one analyzer may use a "
                       "file; stop it") from None
        except BaseException:
            self.release()
            raise
        # for the refusal of a second analyzer; a write refused (a file size limit, a full disk) only leaves it out
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        """Release the lock (closing its file); again is a no-op."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _holder(fd: int) -> int | None:
    """The PID the lock file names or, before its holder has written it (just after taking the lock: two analyzers
    started at once met that in 5 of 40 rounds), the one the kernel lists as holding it (Linux: /proc/locks)."""
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).decode().strip()) or None
    with contextlib.suppress(OSError):
        return _flock_holder(os.fstat(fd), Path("/proc/locks").read_text())
    return None


def _flock_holder(st: os.stat_result, locks: str) -> int | None:
    """The PID holding a flock(2) lock on the file `st` describes, in the text of /proc/locks
    (`1: FLOCK  ADVISORY  WRITE 1234 fe:00:2237556 0 EOF`: the device as major:minor in hex, then the inode)."""
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in locks.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == where and fields[4].isdigit():
            return int(fields[4])
    return None
