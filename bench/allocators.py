"""Where a process's memory sits, by allocator: for benches that ask why an RSS grows.

Each reading is in MB (2**20 bytes) and may be None where the allocator cannot be asked here:
- `glibc_in_use`, `glibc_free`: glibc malloc (mallinfo2): bytes handed out (large blocks included) and
  free bytes it keeps in its arenas (what malloc_trim could give back). Python's objects over 512 bytes,
  numpy arrays and C libraries' buffers live here.
- `duckdb_allocated`, `duckdb_resident`: DuckDB's own jemalloc (statically linked in its Python module):
  bytes DuckDB holds, and pages of that allocator resident in RAM (held + freed pages not yet returned;
  jemalloc's own figure, an upper bound: a page it returned lazily counts until the kernel takes it).
- `pymalloc`: Python's small-object arenas (1 MiB each in 3.11), as sys._debugmallocstats reports them.
The rest of the RSS is code, libraries' data and the interpreter's own mappings.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import sys
import tempfile

MB = 2**20


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def _libc() -> ctypes.CDLL | None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        return libc
    return None


def _jemalloc_ctl():  # noqa: ANN202 - a ctypes function or None
    with contextlib.suppress(ImportError, OSError, AttributeError):
        import _duckdb

        ctl = ctypes.CDLL(_duckdb.__file__).duckdb_je_mallctl
        ctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p,
                        ctypes.c_size_t]
        return ctl
    return None


_LIBC = _libc()
_JE = _jemalloc_ctl()


def _je_stat(name: str) -> float | None:
    value, size = ctypes.c_size_t(0), ctypes.c_size_t(ctypes.sizeof(ctypes.c_size_t))
    if _JE is None or _JE(name.encode(), ctypes.byref(value), ctypes.byref(size), None, 0) != 0:
        return None
    return value.value / MB


def _pymalloc_mb() -> float | None:
    """sys._debugmallocstats writes to the C stderr: read it through a temporary file."""
    with tempfile.TemporaryFile() as out:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        found = re.search(rb"# arenas allocated current\s*=\s*([\d,]+)", out.read())
    return float(found.group(1).replace(b",", b"")) if found else None  # arenas of 1 MiB: their count is MB


def readings() -> dict[str, float | None]:
    """The allocators' figures now (see the module doc), MB each."""
    glibc_in_use = glibc_free = None
    if _LIBC is not None:
        info = _LIBC.mallinfo2()
        glibc_in_use, glibc_free = (info.uordblks + info.hblkhd) / MB, info.fordblks / MB
    if _JE is not None:  # jemalloc's statistics are a snapshot refreshed by writing its epoch
        epoch, size = ctypes.c_uint64(1), ctypes.c_size_t(8)
        _JE(b"epoch", ctypes.byref(epoch), ctypes.byref(size), ctypes.byref(epoch), 8)
    return {"glibc_in_use": glibc_in_use, "glibc_free": glibc_free, "duckdb_allocated": _je_stat("stats.allocated"),
            "duckdb_resident": _je_stat("stats.resident"), "pymalloc": _pymalloc_mb()}
