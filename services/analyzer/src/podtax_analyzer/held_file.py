"""The analyzer's DuckDB file removed or replaced while it runs (audit hH): nothing more is stored, /healthz says how
to get the file back, and what was stored is kept.

Review r5 found three ways to lose it. (1) The one checkpoint, run from /healthz's thread while a batch was being
written, left that batch's commit in the WAL, which closing then emptied into the removed file, after the user's
copy: checkpoints now run under the store's write lock (no transaction open), again whenever the WAL holds
something, and every write transaction (a reparse's too) is refused first (Store.guard). (2) In Kubernetes the
liveness probe restarted the analyzer on /healthz's 503 before anyone could copy the file back: as it stops, the
analyzer puts the file back itself (:meth:`FileWatch.keep`). (3) A file copied back as told was called 'replaced by
another file: move the new file away', undoing the fix: a file back where one was seen removed is said as such."""

from __future__ import annotations

import logging
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from podtax.bus import Unavailable

from podtax_analyzer.db_file import held_fd, identity, moved_why
from podtax_analyzer.store import Store

log = logging.getLogger("podtax.analyzer")


class FileMoved(Unavailable):
    """A write refused because the database file is no longer at its path: the batch waits (in NATS)."""


class FileWatch:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.path = Path(store.path)
        self.opened = identity(self.path)  # the file opened: one removed or replaced stops the writes
        self.removed = False  # the path was seen empty since: a file there later is one put back
        self.saved = False  # checkpointed since the file moved
        store.guard = self.refuse_if_moved

    def problem(self) -> str | None:
        """Why nothing is stored (db_file.moved_why), None while the file is in place. While it is not, the WAL is
        emptied into the open file (so that a copy of it holds every result stored), under the write lock."""
        moved = moved_why(self.path, self.opened, self.removed)
        if moved is None:
            return None
        self.removed = self.removed or not self.path.exists()
        wal = Path(f"{self.path}.wal")
        if not self.saved or (wal.exists() and wal.stat().st_size > 0):
            self.saved = True
            try:
                self.store.checkpoint()
            except Exception:  # noqa: BLE001 - said; the copy then lacks what the WAL held
                log.exception("checkpoint of the removed %s failed", self.path)
        return moved

    def refuse_if_moved(self) -> None:
        """Store.guard: called under the write lock before each write transaction."""
        if moved := self.problem():
            raise FileMoved(moved)

    def keep(self) -> Path | None:
        """As the analyzer stops with the file moved: a copy of the open file put at its path (or beside it, when
        another file is there), written whole first (a temporary name, fsync, rename). Returns where; None when the
        file is in place or nothing could be copied (said)."""
        if self.opened is None or identity(self.path) == self.opened:
            return None
        if self.removed and self.path.exists():  # put back since it was seen removed (nothing stored since)
            log.warning("%s was removed while the analyzer ran and a file is back there: the next start uses it",
                        self.path)
            return None
        fd = held_fd(self.opened)
        if fd is None:
            log.error("%s was removed or replaced and the open file was not found among this process's descriptors: "
                      "what was stored since it was last copied is lost", self.path)
            return None
        try:
            self.store.checkpoint()
        except Exception:  # noqa: BLE001 - said; what the WAL holds goes into the open file as it closes
            log.exception("checkpoint of the removed %s failed", self.path)
        where = self.path if not self.path.exists() else \
            self.path.with_name(f"{self.path.name}.kept-{datetime.now(UTC):%Y%m%dT%H%M%SZ}")
        tmp = where.with_name(f"{where.name}.tmp")
        try:
            with open(f"/proc/self/fd/{fd}", "rb") as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
                dst.flush()
                os.fsync(dst.fileno())
            os.replace(tmp, where)
            dir_fd = os.open(where.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            log.error("%s was removed or replaced, and the open file could not be copied back to %s (%s): what it "
                      "stored is lost as the analyzer stops", self.path, where, exc)
            tmp.unlink(missing_ok=True)
            return None
        if where == self.path:
            log.warning("%s was removed while the analyzer ran: the file it held is put back there as it stops "
                        "(every result it stored kept); the next start uses it", self.path)
        else:
            log.warning("%s was replaced by another file while the analyzer ran: the file it held is kept as %s "
                        "(every result it stored); the next start uses the new file at %s", self.path, where,
                        self.path)
        return where
