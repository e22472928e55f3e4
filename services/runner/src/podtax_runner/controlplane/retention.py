"""How long the runner keeps the timelines failed control-plane runs measured (`<spool>/measured/`,
dispatch.keep_measured). They were never pruned: on a long-lived runner the folder filled up to spool.MAX_BYTES, and
from then on every failed run's timeline went to the log only, the oldest kept for ever.

Now, before each timeline is written and when the runner starts, a file is pruned once it is older than
PODTAX_RUNNER_MEASURED_MAX_AGE_DAYS, or, oldest first, while the folder holds more than
PODTAX_RUNNER_MEASURED_MAX_FILES (0 = no such limit), each pruned file named in the log. Nothing reads these files back
(a restart runs an unreported run again, or sends its kept report: kept.py): each is the user's copy, named in its
run's failure. A file whose run is not reported yet is never pruned: a run in flight in the runner's state (its report
not stored; the next runner resumes it), one executing here or whose report (its failure, or after it the timeline
of a run whose deletes were refused: a result flagged DELETE_REFUSED) is held until NATS takes it. Such files count
toward the limit all the same; so does one whose DELETE_REFUSED result is still pending (pending.py: its runner
stopped before NATS took it; the next runner sends it). Files of other names are left alone, but a temporary file a
crash left mid-write is removed when the runner starts (no timeline is being written then).

At spool.MAX_BYTES (64 MiB) in all, a new timeline still went to the log while older, reported runs' files stayed.
Now, before one is written, the oldest files that may be pruned go until it fits (the run's own earlier file, of an
attempt before a restart, is written over: not counted), each named in the log; only when
pruning all of them would not make room (the rest unreported, pending or of other names) does it go to the log, and
then nothing is pruned for it."""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from podtax import events

from podtax_runner.controlplane import pending
from podtax_runner.spool import MAX_BYTES, cut_run_id, submission_digest

log = logging.getLogger("podtax.runner.controlplane")
MEASURED_DIR = "measured"  # under PODTAX_RUNNER_SPOOL_DIR: the timelines failed runs measured (keep_measured)
RUN_ID_CHARS = 160  # a longer run id is cut and hashed in a kept timeline's name (NAME_MAX is 255 bytes)
NAME = re.compile(r"^[^./]+\.(?P<run>[^./]+)\.[0-9a-f]{16}\.jsonl$")
DAY_S = 86400.0


def measured_name(run: events.RunSpec) -> str:
    """`<campaign>.<run id>.<16 hex digits of the submission's digest>.jsonl`: a campaign submitted again (its run ids
    repeat) does not overwrite the earlier submission's timeline; a run id over RUN_ID_CHARS is cut and ends in `~`
    and 16 hex digits of its hash (campaign 50 + run id 200 made 257 bytes, over NAME_MAX: the file was never
    written)."""
    rid = cut_run_id(run.run_id, RUN_ID_CHARS)
    submitted = run.submitted.isoformat() if run.submitted else ""
    return f"{run.campaign}.{rid}.{submission_digest(submitted)}.jsonl"


def to_prune(files: Iterable[tuple[str, float]], now: float, max_files: int, max_age_days: float,
             unreported: Iterable[str], adding: int = 0, held: Iterable[str] = ()) -> list[tuple[str, str]]:
    """Of the kept timelines (`files`: name and modification time), those to prune, oldest first, each with why:
    older than `max_age_days`, then the oldest while more than `max_files` would be left with `adding` files more
    (0: no such limit). A file of a run in `unreported` (run ids, of any campaign and submission) or named in `held`
    (a DELETE_REFUSED result pending) is never pruned, but counts; other names are ignored."""
    ours = sorted((mtime, name) for name, mtime in files if NAME.match(name))
    left, out, keep, held = len(ours), [], runs(unreported), set(held)
    for mtime, name in ours:
        if not prunable(name, keep, held):
            continue
        if max_age_days and now - mtime > max_age_days * DAY_S:
            why = f"older than {max_age_days:g} days (PODTAX_RUNNER_MEASURED_MAX_AGE_DAYS)"
        elif max_files and left + adding > max_files:
            why = f"more than {max_files} files kept (PODTAX_RUNNER_MEASURED_MAX_FILES)"
        else:
            continue
        out.append((name, why))
        left -= 1
    return out


def runs(unreported: Iterable[str]) -> set[str]:
    """The run ids of `unreported` as a kept timeline's name holds them (cut: measured_name)."""
    return {cut_run_id(r, RUN_ID_CHARS) for r in unreported}


def prunable(name: str, keep: set[str], held: set[str]) -> bool:
    """Whether the kept timeline `name` may be pruned: not of a run in `keep` (runs()), nor in `held`."""
    match = NAME.match(name)
    return bool(match) and name not in held and match.group("run") not in keep  # type: ignore[union-attr]


def to_make_room(files: Iterable[tuple[str, float, int]], used: int, room: int, unreported: Iterable[str],
                 held: Iterable[str] = (), cap: int = MAX_BYTES) -> list[tuple[str, str]]:
    """Of the kept timelines (`files`: name, modification time and size), the oldest that may be pruned (prunable)
    while `used` bytes (every file of the folder) and `room` more would pass `cap`, each with why; none when they fit,
    or when pruning every one that may be would not make room (the new timeline then goes to the log)."""
    if used + room <= cap:
        return []
    why = f"to make room for a new timeline of {room:,} bytes ({cap // 2**20} MiB in all at most)"
    out, keep, held = [], runs(unreported), set(held)
    for _, size, name in sorted((mtime, size, name) for name, mtime, size in files if prunable(name, keep, held)):
        out.append((name, why))
        used -= size
        if used + room <= cap:
            return out
    return []


def prune(folder: Path, max_files: int, max_age_days: float, unreported: Iterable[str], adding: int = 0,
          temporary: bool = False, room: int = 0, replacing: str = "") -> list[str]:
    """Remove the kept timelines to_prune names from `folder` (`adding`: files about to be written; its temporary
    files too when `temporary`: only when no timeline is being written), then those to_make_room names for `room`
    bytes about to be written in place of the file `replacing` (a resumed run's own earlier file, written over: not
    counted, as keep_file does not; before, it was, and files were pruned that need not be), each said in the log;
    the names removed.
    Never raises OSError: a folder it cannot list or search is said in the log in one line and nothing is pruned; a
    file gone meanwhile (pruned by another prune at the same time) is passed over without a word."""
    try:
        if not folder.is_dir():
            return []
        paths = list(folder.iterdir())
    except OSError as exc:  # e.g. no read permission: never a reason to stop the runner or lose a run's failure
        log.warning("could not list %s (%s): no measured timeline pruned there; give the runner read and search "
                    "permission on it", folder, exc)
        return []
    try:
        os.stat(os.path.join(folder, "."))  # needs search permission on it, as each file's stat does
    except PermissionError as exc:  # listed but not searchable: said once, not for each file
        log.warning("could not search %s (%s): no measured timeline pruned there; give the runner read and search "
                    "permission on it", folder, exc)
        return []
    files: list[tuple[str, float, int]] = []
    for path in paths:
        try:
            if temporary and path.name.startswith(".tmp-") and path.is_file():
                path.unlink()
                log.info("removed %s: a temporary file left by a runner stopped mid-write", path)
            elif path.is_file():
                stat = path.stat()
                files.append((path.name, stat.st_mtime, stat.st_size))
        except FileNotFoundError:  # removed meanwhile (another prune): nothing to say
            continue
        except OSError as exc:
            log.warning("could not look at %s (%s): left there", path, exc)
    held = pending.kept_names([name for name, _, _ in files])
    gone = _remove(folder, to_prune([f[:2] for f in files], time.time(), max_files, max_age_days, unreported, adding,
                                     held))
    if room:
        left = [f for f in files if f[0] not in gone and f[0] != replacing]
        gone += _remove(folder, to_make_room(left, sum(size for _, _, size in left), room, unreported, held))
    return gone


def _remove(folder: Path, names: list[tuple[str, str]]) -> list[str]:
    """Remove each file of `names` (name, why) from `folder`, said in the log; the names removed."""
    gone = []
    for name, why in names:
        try:
            (folder / name).unlink()
        except FileNotFoundError:  # already pruned (another prune at the same time): not left there
            continue
        except OSError as exc:
            log.warning("could not prune the measured timeline %s (%s): left there", folder / name, exc)
            continue
        log.info("pruned the measured timeline %s: %s", folder / name, why)
        gone.append(name)
    return gone
