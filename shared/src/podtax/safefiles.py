"""Reading files a user names (import manifests and the logs they list) without opening a door.

A name is resolved inside a root folder (the manifest's, or one given explicitly): no absolute
names, no way out through `..` or a symbolic link, regular files only (no devices, FIFOs or kernel
pseudo-files such as /proc/self/environ), and the size cap is measured on the bytes actually read,
not on what the file system claims (a /proc file says 0 bytes).
"""

from __future__ import annotations

import os
import stat
from functools import lru_cache
from pathlib import Path

# Kernel pseudo-file systems: never benchmark logs, often secrets (environ, kcore, ...).
PSEUDO_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))
_PSEUDO_ROOTS = tuple(str(p) for p in PSEUDO_ROOTS)
MAX_LOG_BYTES = 1_000_000  # the output cap: a raw-log event must fit NATS's 1 MiB max_payload


class UnsafePath(ValueError):
    """A file that must not be read; the message says which and why, and what to do."""


def real_path(path: Path | str) -> Path:
    """`path` absolute with its symbolic links followed, as Path.resolve() makes it, except that a loop of links
    (a -> b -> a) stays as written: Python 3.11's resolve() raises RuntimeError on one (a traceback), while opening
    it then says why (OSError 'Too many levels of symbolic links'), as for any file that cannot be opened."""
    return Path(os.path.realpath(path))


@lru_cache(maxsize=16)
def _real_folder(folder: Path) -> Path:
    """A folder's real path, worked out once: a manifest's rows all share their root and base folders."""
    return folder.resolve()


def _within(path: str, folder: str) -> bool:
    """Path.is_relative_to for real, absolute paths, on strings: pathlib's took most of a big manifest's check."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def resolve_inside(root: Path, name: str, base: Path | None = None) -> Path:
    """The real path of `name`, relative to `base` (default `root`); raises UnsafePath unless it is a
    regular file inside `root`."""
    return resolve_inside_stat(root, name, base)[0]


def resolve_inside_stat(root: Path, name: str, base: Path | None = None) -> tuple[Path, os.stat_result]:
    """resolve_inside, with the file's stat (taken on the checked real path): a caller that wants the size
    need not stat it again. Works on strings and builds one Path at the end (pathlib's parsing was a
    large part of a big manifest's check)."""
    if not name:
        raise UnsafePath("the file name is empty: give the log's path relative to the manifest's folder")
    if "\x00" in name:
        raise UnsafePath(f"{name!r} holds a NUL character, which no file name can")
    if os.path.isabs(name) or name.startswith("~"):
        raise UnsafePath(f"{name} is an absolute path: give it relative to the manifest's folder (or --root)")
    real_root = str(_real_folder(root))
    real = os.path.realpath(os.path.join(_real_folder(base or root), name))
    if not _within(real, real_root):
        raise UnsafePath(f"{name} resolves to {real}, outside {real_root} (through '..' or a symbolic link); "
                         f"only files inside that folder can be read (move them there or choose --root)")
    if any(_within(real, p) for p in _PSEUDO_ROOTS):
        raise UnsafePath(f"{name} resolves to {real}, a kernel pseudo-file or device, not a log")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise UnsafePath(f"{name} not found (looked for {real})") from None
    except OSError as exc:
        raise UnsafePath(f"{name}: cannot read it ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"{name} is not a regular file (a directory, device, FIFO or socket)")
    return Path(real), st


def read_capped(path: Path | str, cap: int, name: str | None = None) -> bytes:
    """Read a regular file (never following a final symbolic link), at most `cap` bytes; raises
    UnsafePath when it holds more, or is not a regular file once opened."""
    label = name or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafePath(f"{label}: cannot open it ({exc.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # before fdopen, which refuses a directory with its own error
        os.close(fd)
        raise UnsafePath(f"{label} is not a regular file (a directory, device, FIFO or socket)")
    # First what the file claims plus one byte (read(cap + 1) allocated the whole cap for every small log);
    # if that much came, the claim was short (a /proc file says 0, a growing log): read on to the cap.
    first = min(cap, st.st_size) + 1
    with os.fdopen(fd, "rb") as f:
        data = f.read(first)
        if len(data) == first and first <= cap:
            data += f.read(cap + 1 - first)
    if len(data) > cap:
        raise UnsafePath(f"{label} holds more than {cap:,} bytes, above the cap; cut it to the benchmark's "
                         f"own output")
    return data


def decode_log(data: bytes) -> str:
    """A saved log's text: UTF-8 (with or without a byte-order mark), or UTF-16 when it starts with a UTF-16
    byte-order mark (what Windows PowerShell's `>` writes); undecodable bytes become U+FFFD, never an error."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")
