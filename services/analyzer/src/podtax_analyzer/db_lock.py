"""One analyzer per DuckDB file: an exclusive lock on a file beside it (`<db>.lock`), taken before anything
looks at the database file and held until the analyzer has closed it.

Two analyzers starting at once on the same empty file raced: each removes an empty file a failed first start left
(service.empty_left), so one could remove the file the other's DuckDB had just created (still 0 bytes) and create
its own: two analyzers, each writing a database of its own, one of them no longer at the path. DuckDB's own lock is
taken only as it opens the file, after that check. The lock here is flock(2): released by the kernel when its
holder exits, however it ends, so a stale lock file is harmless; the file is left in place (removing it would let a
third process lock a new file while the second still holds the old one). It holds the holder's PID, for the
refusal to name it when the kernel does not (podtax.flock_holder: /proc/locks first, the file keeps the last
holder's PID). flock works on a descriptor open for reading only: a lock file the analyzer's user may not write
(another user's, a read-only file system) is opened so, without the PID.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from podtax.flock_holder import holder


class Held(Exception):
    """Another process holds the lock; the message says which and what to do (open_problem's form)."""


def lock_path(db: Path) -> Path:
    return Path(f"{db}.lock")


class DbLock:
    """The lock of one database file, held from construction until `release`."""

    def __init__(self, db: Path) -> None:
        """Take the lock of `db` (creating its folder and lock file as needed); raises Held if another process
        holds it, OSError if the lock file cannot be opened (its filename the lock file's)."""
        self.path = lock_path(db)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, writable = _open(self.path)
        self._fd: int | None = fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = holder(fd)
            self.release()
            who = f"PID {pid}" if pid else "its PID not yet written"
            raise Held(f"another analyzer holds it ({who}; lock file {self.path}): only one analyzer may use a "
                       "file; stop it") from None
        except BaseException:
            self.release()
            raise
        # for the refusal of a second analyzer; a write refused (a file size limit, a full disk) only leaves it out
        if writable:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        """Release the lock (closing its file); again is a no-op."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _open(path: Path) -> tuple[int, bool]:
    """`path` open for reading and writing (created if missing), or for reading only if writing it is refused
    (EACCES, EROFS): the descriptor and whether it may be written. The first refusal is raised if reading is refused
    as well (or the file is missing), its filename the lock file's (service.hold names it)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644), True
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EROFS):
            raise
        refused = exc
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC), False
    except OSError:
        raise refused from None
