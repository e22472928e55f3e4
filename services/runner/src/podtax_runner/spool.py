"""The runner's local copies of reports NATS refuses when it cannot keep them in its bucket either (outbox.KEPT).

A report NATS refuses for want of room is kept in the runner's bucket until NATS takes it, so that a runner restart
sends it instead of running its run again (outbox.py). But when the server's JetStream storage is used up
('insufficient resources', 10023: max_file_store or its disk, reached by a stream without a size limit) that write is
refused too, whatever the bucket's own limit (JetStream's reservation of a stream's limit does not hold off another
stream's writes): the copy lived in memory only, and a restart lost it and ran the run again (its first measurement
lost). With PODTAX_RUNNER_SPOOL_DIR set, such a copy is written there instead (the same bytes as a KEPT value), one
file per run and submission, written atomically (a temporary file fsynced, then renamed, the folder fsynced), at most
MAX_BYTES in all; the next runner reads them beside the bucket's (kept.sorted_out decides alike) and a copy goes at the
same moment as its KEPT key: once the run is recorded as reported (outbox.release), or when sorted out as stale."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from pathlib import Path

from podtax import events

from podtax_runner.outbox import KEPT

# Said once when a runner starts without PODTAX_RUNNER_SPOOL_DIR (service.serve): what a restart then loses
UNSET = ("PODTAX_RUNNER_SPOOL_DIR is unset: a report NATS and the runner's bucket both refuse, and a control-plane "
         "run's result flagged DELETE_REFUSED, are held in memory only until NATS takes them (a restart before then "
         "loses them), and the timeline such a run measured before it ended is one line of this log; set it to a "
         "folder on a volume that outlives the runner (deploy/k8s/README.md: The runner's spool)")
# The spool's files together hold at most this much (a report is at most NATS's max_payload). Its copies are held in
# memory too: by the runner that wrote them (each sent again until NATS takes it) and by the next one, which sends
# them (a file read one at a time, each decoded report kept until sent: measured, a 66 MiB spool of 1 MiB logs raised
# its peak RSS from 77 to 143 MiB; reading all files at once, to 208 MiB). 256 MiB was the runner's whole memory
# limit in deploy/k8s/runner.yaml (256Mi): a full spool left a starting runner no room. A quarter of it
# leaves room for the runner itself (~80 MiB before any campaign), its bucket's copies and its campaigns.
MAX_BYTES = 64 * 2**20
SUFFIX = ".json"
NAME_MAX = 255  # bytes of a file's name (ext4, xfs): a longer one fails with ENAMETOOLONG
NAME = re.compile(r"^(?P<key>" + re.escape(KEPT) + r"\.[^./]+\.[^./]+)\.[0-9a-f]{16}" + re.escape(SUFFIX) + "$")


def submission_digest(submitted: str) -> str:
    """16 hex digits naming a campaign's submission in a file name (its run ids repeat when it is submitted again)."""
    return hashlib.sha256(submitted.encode()).hexdigest()[:16]


def cut_run_id(run_id: str, chars: int) -> str:
    """`run_id` when it has at most `chars` characters, else its first ones, `~` and 16 hex digits of its hash (`chars`
    in all). `~` is no run id's character: a cut id never equals another's whole one."""
    if len(run_id) <= chars:
        return run_id
    return f"{run_id[:chars - 17]}~{hashlib.sha256(run_id.encode()).hexdigest()[:16]}"


def file_key(run: events.RunSpec) -> str:
    """The KEPT key a spool file of the run is named by: kept_key, its run id cut (cut_run_id) when the file's name
    would pass NAME_MAX (a campaign of 50 characters and a run id of 200 made 262 bytes: the write failed with
    ENAMETOOLONG, the copy was held in memory only). A name that fits is as before (one never written is the only
    one that changes)."""
    room = NAME_MAX - len(f"{KEPT}.{run.campaign}..{submission_digest('')}{SUFFIX}".encode())
    return f"{KEPT}.{run.campaign}.{cut_run_id(run.run_id, room)}"


def names_run(key_run_id: str, run_id: str) -> bool:
    """Whether a file key's run id (a spool file's, file_key; a bucket key's, kept_key) stands for `run_id`."""
    return key_run_id == cut_run_id(run_id, len(key_run_id))


def file_name(run: events.RunSpec, submitted: str) -> str:
    """`held.<campaign>.<run id>.<16 hex digits of the submission's digest>.json` (names of the DNS-label style and
    run ids have no dot nor slash; a run id cut as file_key says)."""
    return f"{file_key(run)}.{submission_digest(submitted)}{SUFFIX}"


def write_atomic(folder: Path, name: str, value: bytes) -> Path:
    """Write `value` to `folder/name` atomically: a fresh temporary file (mkstemp: never a name planted before, nor
    a symlink followed), fsynced, renamed over `name`, the folder fsynced; nothing left behind on an error."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(value)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, folder / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(folder)
    return folder / name


def key_of(name: str) -> str | None:
    """The KEPT key a spool file's name stands for, None for another file (a temporary one)."""
    found = NAME.match(name)
    return found.group("key") if found else None


class Spool:
    """Reports kept in a local folder (see the module)."""

    def __init__(self, folder: Path, max_bytes: int = MAX_BYTES) -> None:
        self.folder, self.max_bytes = folder, max_bytes

    def used(self) -> int:
        """Bytes the spool's files hold now."""
        if not self.folder.is_dir():
            return 0
        return sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file())

    def write(self, run: events.RunSpec, submitted: str, value: bytes) -> Path:
        """Write `value` (outbox.kept_value) for the run, atomically; OSError when it does not fit under max_bytes
        or the folder refuses it (nothing left behind then)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / file_name(run, submitted)
        old = path.stat().st_size if path.exists() else 0
        if self.used() - old + len(value) > self.max_bytes:
            raise OSError(f"the spool {self.folder} would hold more than {self.max_bytes:,} bytes")
        return write_atomic(self.folder, path.name, value)

    def entries(self) -> list[tuple[str, Path]]:
        """(KEPT key, file) of each copy spooled, not read (the next runner reads one file at a time: all of them read
        at once held the spool twice over, its bytes and its reports); temporary files a crash left are removed."""
        if not self.folder.is_dir():
            return []
        out = []
        for path in sorted(self.folder.iterdir()):
            if path.name.startswith(".tmp-"):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            key = key_of(path.name)
            if key is not None and path.is_file():
                out.append((key, path))
        return out

    def remove(self, run: events.RunSpec, submitted: str) -> None:
        """Remove the run's spooled copy of this submission (its campaign submitted again reuses its run ids: the
        new submission's copy stays); of any submission when it is unknown ('': a campaign finished or cancelled
        has left the runner, and none of it runs again meanwhile)."""
        if not self.folder.is_dir():
            return
        if submitted:
            (self.folder / file_name(run, submitted)).unlink(missing_ok=True)
        else:
            for key, path in self.entries():
                if key == file_key(run):
                    path.unlink(missing_ok=True)
        _sync_folder(self.folder)


def _sync_folder(folder: Path) -> None:
    """fsync the folder, so a rename or removal outlives a crash of the machine."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
