"""fio's flags and run-wide helpers shared by its two readers, the JSON report (podtax.parsers.fio) and
the normal text output (podtax.parsers.fio_text): fio's own failure words (its verify failures, its last
words after `Starting N processes`), the flags both raise with the
same words (INCONSISTENT_LATENCY, VERIFY, RATE_LIMITED, INTERRUPTED, GROUPS, STAGGERED, ERRORS, ROUNDED_RUNTIME, SHORT,
PARAM_MISMATCH for timed syncs, for a job that does no I/O and for a synchronous engine at an iodepth over 1),
the refusals of a job that does no I/O (alone, or within a reported group) and the merge of the jobs' echoed options."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from podtax.parsers.base import (
    Echoed,
    ParseFailure,
    errors_flag,
    guarded,
    holds,
    holds_any,
    parse_int,
    requested_int,
)

STARTING = re.compile(r"^Starting ([0-9]{1,6}) (?:process|thread)", re.M)  # `Starting 4 processes`
WRITES = ("write", "randwrite", "trimwrite")  # the rw modes that only write (their reads are a verify pass)
# fio's lines that are no failure: it goes on (`fio: this platform does not support process shared mutexes,
# ... get rid of this warning.`, `fio: native_fallocate call failed: Operation not supported`)
_BENIGN = ("warning", "native_fallocate call failed")
# an engine that does no I/O (cpuio burns CPU): `cpu (noop): ioengine=cpuio, cpuload=50, cpucycle=50000`
_NO_IO = re.compile(r"^[ \t]*(\S[^\n]*?) \(noop\): ioengine=([\w-]+)[^\n]*", re.M)
_NOOP = guarded("(noop): ioengine=")  # its `=` is absent from a JSON report: one memchr, not 6 µs in 12 KiB
SHORT_SHARE = 0.9  # a job direction timed under this share of the requested runtime stopped early (SHORT)
_FATAL = ("fio: ", "error: ")  # fio's own words for a failure (`fio: pid=.., err=`, `fio: engine libaio not loadable`)


def exceeds(clat_mean: float, lat_mean: float) -> bool:
    """fio's mean completion latency above its mean total latency (lat = slat + clat for every I/O):
    impossible, so one of them is wrong (an I/O engine's bug). 1% + 1 µs of slack for rounding."""
    return lat_mean > 0 and clat_mean > lat_mean * 1.01 + 1.0


def latency_flag(suspect: list[str]) -> str:
    return ("INCONSISTENT_LATENCY: fio's mean completion latency exceeds its mean total latency, which "
            f"includes it, for {', '.join(suspect)}: an I/O engine's or fio's bug, so those clat figures "
            "are left out")


def said(text: str) -> str:
    """fio's own words for a failure (`fio: pid=12812, err=42/...`, `error: maximum number of jobs (8)
    reached.`), as `: ...` to append to a message, or ""."""
    if not holds(text, "fio: ") and not holds(text, "error: "):  # the usual case, without splitting the log
        return ""
    said = [line.strip() for line in text.split("\n") if line.lstrip().startswith(_FATAL)
            and not line.lstrip().startswith("fio: terminating on signal")  # the cause is before it
            and not any(word in line for word in _BENIGN)]
    said = sorted(dict.fromkeys(said), key=lambda line: not line.startswith("fio: pid="))  # `err=` lines first
    return f": {' / '.join(said)[:500]}" if said else ""


def errors_beside(text: str) -> list[str]:
    """The ERRORS flag when the log holds fio's failure lines although every job read reported err=0:
    another run's (see base.errors_flag)."""
    words = said(text)
    return [errors_flag("fio", words.removeprefix(": "))] if words else []


# fio counts a direction's runtime in whole ms rounded up (backend.c update_runtime: `(elapsed_us + 999) / 1000`)
# and divides its I/O by it: a runtime printed R ms ran over R - 1 ms, so its IOPS and bandwidth may be low by up to
# R / (R - 1) (for 1 ms without bound: 16 null-engine reads of 0.5 µs print 16.0k IOPS). Flagged when that bound is
# over 5% (R <= 20 ms): host and pod differ by a few percent, so rounding alone must not decide it.
ROUNDED_MAX_MS = 20
ROUNDED_SHARE = 0.05  # the largest error left unflagged: 21 ms / 20 ms - 1


ROUNDED_DIRECTIONS = "directions so timed: "  # ROUNDED_RUNTIME's last words: the directions whose rates it touches


def rounded_runtime(runtimes: list[tuple[str, float]]) -> list[str]:
    """ROUNDED_RUNTIME when a job direction read (`<job> <direction>`, its runtime in ms as fio prints it) ran
    ROUNDED_MAX_MS or less: fio's rounding alone may put its IOPS and bandwidth over ROUNDED_SHARE too low; it ends
    naming those directions (ROUNDED_DIRECTIONS), so the other direction of a randrw run is not marked."""
    short = [(what, ms) for what, ms in runtimes if ms <= ROUNDED_MAX_MS]
    if not short:
        return []
    what, ms = min(short, key=lambda pair: pair[1])
    directions = ", ".join(sorted({name.rsplit(" ", 1)[-1] for name, _ in short}))  # read by the analyzer (celldata)
    ran = "1 ms or less" if ms <= 1 else f"over {ms - 1:.0f} ms"
    bound = "any amount" if ms <= 1 else f"up to {100 / (ms - 1):.0f}% ({ms:.0f}/{ms - 1:.0f})"
    others = f"; {len(short)} job directions ran {ROUNDED_MAX_MS} ms or less" if len(short) > 1 else ""
    return [f"ROUNDED_RUNTIME: fio timed {what} as {ms:.0f} ms, rounded up to whole ms (it ran {ran}{others}), so "
            f"the true IOPS and bandwidth may be {bound} higher (latencies are unaffected); a runtime over "
            f"{ROUNDED_MAX_MS} ms keeps this error within {ROUNDED_SHARE:.0%}: raise size, or run time_based with "
            f"runtime=10s; {ROUNDED_DIRECTIONS}{directions}"]


def short_runtime(runtimes: list[tuple[str, float]], requested: Mapping[str, Any] | None) -> list[str]:
    """SHORT when a job direction read (as for rounded_runtime) ran under SHORT_SHARE of the run's requested
    runtime (seconds): the template runs fio --time_based, so the run lasts that long; a shorter one was not time_based
    (the runtime only a cap: it ended when its size was read) or ended early (a signal), its figures not of the cell's
    run."""
    runtime = requested_int(requested, "runtime")
    short = [(what, ms) for what, ms in runtimes if runtime and runtime > 0 and ms < SHORT_SHARE * runtime * 1000]
    if not short:
        return []
    what, ms = min(short, key=lambda pair: pair[1])
    return [f"SHORT: fio ran {what} for {ms:.0f} ms of the {runtime} s runtime asked: the runtime was only a cap "
            "(the run was not time_based, so it ended when its size was done) or the run ended early (a signal, an "
            "error), so its figures are of a shorter run than the cell's; re-run it with --time_based and that "
            "runtime (as podtax's fio template does) to compare it with the cell's runs"]


def drop_reads(jobs: list[tuple[str, str, dict[str, float]]]) -> bool:
    """Leave out the read figures of the text report's jobs (a write job's verify pass); True when any were."""
    dropped = False
    for _name, _group, figures in jobs:
        for key in [k for k in figures if k.startswith("read_")]:
            del figures[key]
            dropped = True
    return dropped


def verify_flag(jobs: list[str]) -> str:
    return (f"VERIFY: the reads of write job(s) {', '.join(dict.fromkeys(jobs))} are fio's verify pass, not the "
            "workload: left out")


def rate_flag(options: str) -> list[str]:
    """`rate_iops=350,150` (a job file echoed in the log, or JSON's options) or fio's own `0-5000 IOPS:` in
    its progress line: the figures are the cap the run was held to, not what the device can do."""
    return [f"RATE_LIMITED: fio was held to a rate ({options}): its figures are bounded by that cap, not by what "
            "the device can do"] if options else []


def interrupted_flag(text: str) -> list[str]:
    """`fio: terminating on signal 2`: the jobs stopped before their runtime or size; figures cover the part run."""
    if not holds(text, "fio: terminating on signal"):  # the usual case: rfind rules it out fastest
        return []
    at = text.find("fio: terminating on signal")
    said = text[at:].split("\n", 1)[0].strip()
    return [f"INTERRUPTED: {said}: the jobs stopped early, so the figures cover only the part that ran"]


def merge_echoed(per_job: list[Echoed]) -> Echoed:
    """The options of the run: a value all jobs share as it is, values that differ (jobs of several
    groups, or side by side) joined in job order (`rw=randread,randwrite`), so no job stands for all."""
    if len(per_job) == 1:
        return per_job[0]
    merged: Echoed = {}
    for key in dict.fromkeys(k for job in per_job for k in job):
        values = list(dict.fromkeys(job[key] for job in per_job if key in job))
        merged[key] = values[0] if len(values) == 1 else ",".join(map(str, values))
    return merged


def jobs_flag(count: int | str) -> str:
    """PARAM_MISMATCH (with params given) for a run of several jobs at once: the template runs one."""
    return (f"PARAM_MISMATCH: jobs: fio ran {count} jobs (numjobs or several job sections); podtax's fio "
            "runs one, so the IOPS and bandwidth are several jobs' sum")


def staggered_flag(said: str, total: float) -> str:
    """STAGGERED: `said` (what fio's group figure is) is over 3% below `total`, the sum of its jobs' rates."""
    return (f"STAGGERED: {said}, the sum of its jobs' rates {total:.0f} KiB/s: the jobs did not all run at once "
            "(startdelay, different runtimes), so the summed rate overstates them")


def groups_flag(groups: int) -> str:
    return (f"GROUPS: the jobs ran in {groups} groups one after another (stonewall or new_group): totals are "
            "per group (group<id>_<dir>_iops), none over the whole run")


def verify_failed(text: str) -> str:
    """fio's verify failures (`sha256: verify failed at file ... offset ...`), the first and how many, as `: ...`."""
    at = text.find("verify failed at file ")
    if at < 0:
        return ""
    first = text[text.rfind("\n", 0, at) + 1:].split("\n", 1)[0].strip()
    return f": {first[:300]} ({text.count('verify failed at file ')} verify failure(s))"


def after_start(text: str) -> str:
    """fio's last words after `Starting N processes` when no job reported: an engine's error printed
    without `fio: ` (`ioengine io_uring_cmd only works with nvme ns generic char devices`), as `: ...`."""
    at = STARTING.search(text)
    if at is None:
        return ""
    lines = [line.strip() for line in text[at.end():].split("\n")[1:] if line.strip()
             and not line.lstrip().startswith(("Jobs:", "fio: terminating"))
             and "Laying out IO file" not in line]
    return f": {lines[-1][:300]}" if lines else ""


def no_io(text: str) -> str:
    """The header fio prints for a job whose engine does no I/O (`cpu (noop): ioengine=cpuio, ...`), or ""."""
    m = _NO_IO.search(text) if holds_any(text, _NOOP) else None
    return "" if m is None else m.group(0).strip()[:200]


def no_io_jobs(text: str) -> dict[str, str]:
    """{job name: its header} of each job whose engine does no I/O, from the `<job> (noop): ioengine=...` lines fio
    prints on stdout (not to an --output= file: there only a JSON report's options say it)."""
    jobs: dict[str, str] = {}
    for m in _NO_IO.finditer(text) if holds_any(text, _NOOP) else ():
        jobs.setdefault(m.group(1), m.group(0).strip()[:200])
    return jobs


def no_io_failure(header: str) -> ParseFailure:
    return ParseFailure("unknown-format", f"fio ran a job whose engine does no I/O (`{header}`) and no other: the "
                                          "log has no I/O figures to read")


def no_io_flag(no_io_jobs: dict[str, str]) -> list[str]:
    """A no-I/O job (cpuio: CPU load; see no_io_jobs) beside the I/O jobs read: left out of the figures, flagged."""
    header = next(iter(no_io_jobs.values()), "")
    return [f"PARAM_MISMATCH: ioengine: a job that does no I/O ran beside the jobs read (`{header}`, left out): "
            "podtax's fio runs no CPU load beside its I/O, so these figures measure another cell"] if header else []


def json_no_io(text: str, jobs: list[dict[str, Any]], engines: list[Any]) -> tuple[dict[str, str],
                                                                                   ParseFailure | None]:
    """no_io_jobs of a JSON report, and grouped_no_io's refusal: its `(noop)` lines (stdout), else each job whose
    options name cpuio (`engines`: each job's ioengine, global or its own; all an --output= file says of it)."""
    found = no_io_jobs(text)
    for job, engine in zip(jobs, engines, strict=True):
        if engine == "cpuio":
            found.setdefault(str(job.get("jobname", "?")), f"{job.get('jobname', '?')}: ioengine=cpuio")
    reports = [(str(job.get("jobname", "?")), None, any(_bytes(job.get(d)) for d in ("read", "write", "trim")))
               for job in jobs]
    return found, grouped_no_io(found, reports) if found else None


def _bytes(stats: Any) -> bool:
    """A JSON job direction that moved bytes (a cpuio job's loops move none)."""
    done = stats.get("io_bytes") if isinstance(stats, dict) else None
    return isinstance(done, (int, float)) and not isinstance(done, bool) and done > 0  # noqa: UP038


def grouped_no_io(no_io_jobs: dict[str, str], reports: list[tuple[str, Any, Any]]) -> ParseFailure | None:
    """A job that does no I/O inside a group fio reports as one job (group_reporting): its loops, counted as issued
    reads, are in the group's read IOPS and cannot be taken out. `reports`: each job report's (name, group, its I/O
    figures, empty for none); a no-I/O job is inside one when no report bears its name, or one that does has I/O."""
    if not no_io_jobs:
        return None
    names = {report[0] for report in reports}
    measured = {report[0] for report in reports if report[2]}
    inside = [name for name in no_io_jobs if name not in names or name in measured]
    if not inside:
        return None
    return ParseFailure("unknown-format", f"fio reports a job that does no I/O (`{no_io_jobs[inside[0]]}`) within "
                                          "a group of I/O jobs (group_reporting): its loops are counted in the "
                                          "group's read IOPS and cannot be told apart; run the CPU load in its own "
                                          "group (new_group or stonewall) or without group_reporting")


def missing_direction(job: str, direction: str | None, no_io_jobs: dict[str, str], figures: dict[str, float]) -> None:
    """Raise when a text report's job issued I/O of a `direction` but printed no line for it (`figures`: the
    directions read): a damaged log; not for a job whose engine does no I/O (cpuio counts its loops as issued reads):
    it has no figures and is left out. A job with no direction line at all may be one whose `(noop)` line is lost
    (fio prints it only on stdout, not to an --output= file): the refusal says so."""
    if not direction or "mixed_iops" in figures or job in no_io_jobs:  # unified_rw_reporting prints only `mixed`
        return
    maybe = (" (or its engine does no I/O, as cpuio, which counts its loops as issued reads: fio prints its `"
             f"{job} (noop): ioengine=` line only on stdout, not to an --output= file; run such a load apart)"
             if not figures else "")
    raise ParseFailure("unknown-format", f"fio job {job} issued {direction} I/O but has no `{direction}:` line: that "
                                          f"line is missing, so the log is damaged{maybe}")


def lost_line(job: str, direction: str) -> ParseFailure:
    """A job's latency lines twice for one direction, or before any direction line: a line is missing."""
    if not direction:
        return ParseFailure("unknown-format", f"fio job {job} prints latencies before any direction line "
                                              "(`read: IOPS=...`): that line is missing, so the log is damaged")
    return ParseFailure("unknown-format", f"fio job {job} prints {direction} latencies twice: the line of the "
                                          "direction between them (`write: IOPS=...`) is missing, so the log is "
                                          "damaged")


def sync_flag(count: str) -> list[str]:
    """`fsync=N` / `fdatasync=N`: syncs timed between the writes (not `end_fsync`'s one at the end, which fio
    does not time). The template's fio issues none, and a write waiting on a sync is another measurement.
    `count`: how many ("5942 "), or "" (the text report's counts of fdatasync are not its syncs)."""
    return [f"PARAM_MISMATCH: fsync: fio timed {count}syncs (fsync, fdatasync or sync_file_range) between its "
            "writes; podtax's fio issues none, so these figures measure another cell"]


def timed_syncs(jobs: list[dict[str, Any]]) -> list[str]:
    """The flag for the syncs the JSON jobs timed (`"sync": {"total_ios": 5942, "lat_ns": {"N": 5942, ...}}`)."""
    count = 0
    for job in jobs:
        sync = job.get("sync")
        lat = sync.get("lat_ns") if isinstance(sync, dict) else None
        n = lat.get("N") if isinstance(lat, dict) else None
        count += n if isinstance(n, int) and n > 0 else 0
    return sync_flag(f"{count} ") if count else []


_RWMIX = ("rwmixread", "rwmixwrite")


def rwmix_flag(options: list[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> list[str]:
    """PARAM_MISMATCH for a mixed job (rw, randrw) of another read share than fio's default 50% (`rwmixread=75`,
    `rwmixwrite=...`; the template sets neither): its read_iops and write_iops measure another mix. `options`: each
    job's (global options, its own options); fio takes the job's own share over [global]'s, and of two in one
    section the later (the JSON lists them as given)."""
    for common, own in options:
        job = {**common, **own}
        if job.get("rw", job.get("readwrite")) not in ("rw", "randrw", "readwrite"):
            continue
        given = [key for key in own if key in _RWMIX] or [key for key in common if key in _RWMIX]
        key = given[-1] if given else ""
        share = parse_int(str(job.get(key, "50")).strip())
        if key and share is not None and share != 50:
            reads = share if key == "rwmixread" else 100 - share
            return [f"PARAM_MISMATCH: rwmix: fio mixed {reads}% reads ({key}={job[key]}); podtax's fio runs its "
                    "mixed modes at fio's default 50/50, so these read and write figures measure another mix: "
                    f"rerun without --{key}"]
    return []


# the engines that keep one I/O in flight (FIO_SYNCIO in fio's engines/sync.c, mmap.c, splice.c, net.c); a JSON job
# that echoes none ran fio's default, psync (os/os.h; `sync` before 3.0; windowsaio on Windows only)
SYNC_ENGINES = frozenset(("sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "splice", "net", "netsplice"))
_CAPPED = "queue depth will be capped at 1"  # fio 3.33+'s note (backend.c), printed before the report


def capped_depth(echoed: Echoed, text: str) -> list[str]:
    """PARAM_MISMATCH, whatever the params, for an iodepth over 1 with a synchronous engine: fio submits its next
    I/O only once the last one completed (3.33+ says `note: both iodepth >= 1 and synchronous I/O engine are
    selected, queue depth will be capped at 1`; earlier ones said nothing), so the figures are those of depth 1,
    never what the echoed iodepth names (podtax's fio runs libaio for any iodepth over 1). Jobs of several depths
    or engines echo them joined (merge_echoed: `16,4`, `psync,libaio`), which job ran which lost: flagged when a
    depth is over 1 and fio said its note (a synchronous job ran over depth 1) or every engine listed is synchronous."""
    depth, engine = echoed.get("iodepth"), echoed.get("ioengine")
    depths = [parse_int(part.strip()) for part in str(depth).split(",")] if depth is not None else []
    if max((d for d in depths if d is not None), default=0) <= 1:
        return []
    said = holds(text, _CAPPED)
    engines = [name.strip() for name in str(engine).split(",")] if engine is not None else []
    synchronous = [name for name in engines if name in SYNC_ENGINES]
    if engine is None and (said or holds(text, '"fio version"')):
        engine = "psync (fio's default)"
    elif not said and (not engines or len(synchronous) < len(engines)):
        return []
    elif len(synchronous) < len(engines):  # fio's note: one of the synchronous ones ran over depth 1
        engine = f"{','.join(synchronous) or engine} (jobs of {engine})"
    return [f"PARAM_MISMATCH: iodepth: fio ran iodepth={depth} with the synchronous engine {engine}, which keeps one "
            f"I/O in flight (fio: queue depth capped at 1): its figures are those of queue depth 1; rerun with "
            f"--ioengine=libaio (podtax's fio does so for any iodepth over 1)"]
