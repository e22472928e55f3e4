"""hdparm `-T` (cached) and `-t` (buffered disk) timings, with or without `--direct`.

hdparm prints `MB/sec` and switches to `kB/sec` below 1 MB/s; both are its binary units
(MB = 2^20 bytes, kB = 2^10 bytes), so kB/sec is divided by 1024 and every rate is in MB/s.
busybox's hdparm prints every rate in `kB/s`, the same KiB.
Metrics: `cached_read_mb_per_second`, `disk_read_mb_per_second` (`direct_` prefix for the
O_DIRECT variants), the MB read and seconds of each, and the template's primary
`read_mb_per_second`: the timing of the requested mode, else the disk timing when both were run. Whatever the
params (a run, an import, or none: `podtax parse`), an O_DIRECT timing (`--direct`) is flagged PARAM_MISMATCH: the
template never sets it (unless the params say `direct`, booleans read by their words: `direct=false` is not direct).
`HDIO_DRIVE_CMD(identify) failed` and similar ioctl noise lines are ignored, but not `BLKFLSBUF failed`: hdparm
could not drop the device's buffer cache, so a buffered disk timing is refused (see _not_flushed).
In one stream (`2>&1`) a later device's error (`/dev/sdb: Operation not permitted`) lands inside the last timing
line (hdparm flushes stdout after each label, not after its figures): the line is mended (see _unsplit).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from podtax.parsers.base import (
    Echoed,
    MetricList,
    Parsed,
    ParseFailure,
    compare_echoed,
    errors_flag,
    same_value,
    to_number,
)

TOOL = "hdparm"
# `buffer-cache` is the cached timing's label in hdparm 5.x (Linux 2.4 days)
# `--offset 37` (hdparm 9.x): `Timing buffered disk reads (offset 37 GB):   6 MB in  3.90 seconds = ...`
_TIMING = re.compile(r"^Timing (O_DIRECT )?(cached|buffer-cache|buffered disk|disk) reads"
                     r"(?: \(offset ([0-9]{1,9}) GB\))?:\s+([\d.]+) MB in\s+([\d.]+) seconds\s*=\s*"
                     r"([\d.]+) (MB|kB|GB)/s(?:ec)?\s*$")  # busybox: `kB/s`
_DEVICE = re.compile(r"^(/dev/\S+?):\s*(.*)$")
# a loop's own header for each device: `--- /dev/sdb ---`, `==> /dev/sdb <==`, `### /dev/sdb`
_SEPARATOR = re.compile(r"^[-=#*>]+\s*(/dev/[\w/.-]+)\s*[-=#*<]*$")
# what hdparm prints when it sets or reads a setting: `setting standby to 100 (...)`, ` readonly      =  0 (off)`
_SETTING = re.compile(r"^(?:setting \w|[A-Za-z_/-]+(?: [A-Za-z_/-]+)?\s+=\s+\S)")
_LABELS = ("Timing cached reads:", "Timing buffered disk reads:", "Timing O_DIRECT cached reads:",
           "Timing O_DIRECT disk reads:")
_DENIED = ("Operation not permitted", "Permission denied")
USAGE = "hdparm - get/set hard disk parameters"  # the first line of its usage text
_SCALE = {"kB": 1 / 1024, "MB": 1.0, "GB": 1024.0}
# a timing label, then another device's `perror` message (`name: Error text`, no colon in the text: not
# `BLKFLSBUF failed: ...`), then the label's figures on the next line
_SPLIT = re.compile(r"^([ \t]*Timing [^\n:]*reads(?: \(offset [0-9]{1,9} GB\))?:)[ \t]*(\S+: [A-Z][^\n:]*?)[ \t]*\n"
                    r"[ \t]*([0-9.]+ [kMG]B in [^\n]*)$", re.M)


def parse(text: str, test: str | None = None, requested: Mapping[str, Any] | None = None,
          recorded_version: str | None = None) -> Parsed:
    timings: dict[str, tuple[float, float, float]] = {}
    repeated: list[str] = []
    devices: list[str] = []  # the devices that timings were printed under, in order
    device: str | None = None
    under: str | None = None  # the device of the latest `/dev/...:` line
    problems: list[str] = []
    seen_timing_word = False
    broken: list[str] = []  # `Timing ... reads:` lines without their figures
    failed: str | None = None  # the first `read() failed: <error>` line
    offset: int | None = None  # `--offset N`: the disk timing read N GiB into the device
    text, problems[:0] = _unsplit(text)
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if failed is None and "read() failed: " in line:
            failed = line
        if line.startswith("Timing"):
            seen_timing_word = True
            m = _TIMING.match(line)
            if not m:
                broken.append(line)
                continue
            cached = m.group(2) in ("cached", "buffer-cache")
            kind = ("direct_" if m.group(1) else "") + ("cached" if cached else "disk")
            rate = to_number(m.group(6)) * _SCALE[m.group(7)]
            if m.group(3):
                offset = int(m.group(3))
            if kind in timings:
                repeated.append(kind)
            if under is not None and under not in devices:
                devices.append(under)
            timings[kind] = (rate, to_number(m.group(4)), to_number(m.group(5)))
            continue
        if line[0] == "T" and any(label.startswith(line) for label in _LABELS):
            broken.append(line)  # cut inside its label (` Tim`): `-tT` cut so would pass for `-T`
            continue
        d = _DEVICE.match(line) if line.startswith("/dev/") else None
        if d is None and "/dev/" in line and len(line) < 200:  # a header line is short (its pattern can backtrack)
            sep = _SEPARATOR.match(line)
            if sep:
                under = sep.group(1)
                continue
        if d:
            device = device or d.group(1)
            under = d.group(1)
            if d.group(2):
                problems.append(line)
        elif "Operation not permitted" in line or "Permission denied" in line or "No such file" in line:
            problems.append(line)  # _DENIED or a missing device
    device = devices[0] if devices else device  # the timed device, not an earlier `/dev/x: ...` line
    echoed: Echoed = {"device": device} if device else {}
    if failed and "device too small" not in failed:  # an I/O error on the device: the timing is lost
        raise ParseFailure("fatal", f"hdparm could not read {device or 'the device'}: {failed[:200]}")
    flush = _flush_failed(text)
    if flush and ("disk" in timings or any("BLKFLSBUF failed" in line for line in broken)):
        raise _not_flushed(flush, device, bool(timings))
    if not timings:
        denied = [p for p in problems if any(w in p for w in _DENIED)]
        if denied:
            raise ParseFailure("permission-denied", f"hdparm could not read the device: {denied[0]} — run "
                                                    "it as root (or with CAP_SYS_RAWIO) on the host")
        missing = [p for p in problems if "No such file" in p]
        if missing:
            raise ParseFailure("bad-argument", f"hdparm was given a device that does not exist: {missing[0]}")
        flag = next((line.strip() for line in text.split("\n") if line.rstrip().endswith(": unknown flag")),
                    None) if text.find(": unknown flag") >= 0 else None  # looked for line by line only when there
        if flag or USAGE in text:  # `hdparm --bogus`: `bogus: unknown flag`; `hdparm -Z9`: its usage text
            raise ParseFailure("bad-argument", f"hdparm rejected its command line{': ' + flag[:120] if flag else ''}"
                                               f"{' (it printed its usage text)' if USAGE in text else ''}")
        if "device too small" in text:  # an empty device (an unbound loop device, /dev/null), exit status 0
            sense = next((line.strip()[:120] for line in text.split("\n") if "SG_IO:" in line), None)
            why = f"; the kernel said `{sense}`: a driver or disk fault?" if sense else \
                " (is it an empty or unattached device?)"
            raise ParseFailure("fatal", f"hdparm could not time {device or 'the device'}: read() hit EOF - "
                                        f"device too small{why}")
        unread = [line for line in broken if not line.endswith(":")]  # `... reads:` alone: killed while timing
        if unread:  # figures there, in a form not read: `=3D 43.62 MB/sec` (a mail's quoted-printable), units
            raise ParseFailure("unknown-format", f"hdparm's timing line is in a form podtax does not read: "
                                                 f"`{unread[0][:200]}`")
        setting = None if seen_timing_word else next(
            (line.strip() for line in text.split("\n") if _SETTING.match(line.strip())), None)
        if setting:  # `hdparm -S 100`, `hdparm -I`: another call of hdparm, not one that was cut
            raise ParseFailure("unknown-format", f"hdparm printed settings of {device or 'the device'} "
                                                 f"(`{setting[:80]}`) but no timing: it was run without -t or -T")
        if device or seen_timing_word:
            raise ParseFailure("truncated", "hdparm printed its device but no `Timing ... reads` line: "
                                            "the run was cut short")
        raise ParseFailure("unknown-format", "no hdparm `Timing ... reads:` line found in the log")
    if broken:  # killed while timing (hdparm prints the label first), or a read error: the mode's figure is lost
        reason = "fatal" if "device too small" in text else "truncated"
        raise ParseFailure(reason, f"hdparm printed `{broken[0][:200]}` without its figures: the run was cut "
                                   "short or the read failed")
    if len(devices) > 1:  # `hdparm -t /dev/sda /dev/sdb`: one device's figures must not pass for another's
        raise ParseFailure("unknown-format", f"this log holds hdparm timings of {len(devices)} devices "
                                             f"({', '.join(devices)}); run hdparm on one device per log")
    if repeated:  # several runs appended to one log: which one counts is not the parser's call
        raise ParseFailure("unknown-format", f"this log holds several hdparm runs ({repeated[0]} reads timed "
                                             f"{1 + repeated.count(repeated[0])} times); split it, one run per log")
    mode = str((requested or {}).get("mode") or "")
    metrics = MetricList()
    primary = _primary(timings, mode)
    metrics.add("read_mb_per_second", timings[primary][0], "MB/s", True)
    for kind, (rate, size, seconds) in timings.items():
        metrics.add(f"{kind}_read_mb_per_second", rate, "MB/s", True)
        metrics.add(f"{kind}_read_mb", size, "MB", True)
        metrics.add(f"{kind}_read_time", seconds, "s", False)
    echoed["mode"] = "disk" if primary.endswith("disk") else "cached"
    if offset is not None:
        echoed["offset_gb"] = offset
    if primary.startswith("direct_"):
        echoed["direct"] = 1
    flags = compare_echoed(requested, echoed, ("device", "mode"))
    # a param `direct=false` (an import's text) is a word, not an empty value: read as fio's `direct` is
    if primary.startswith("direct_") and not same_value((requested or {}).get("direct") or 0, 1):
        flags.append(f"PARAM_MISMATCH: direct: hdparm timed O_DIRECT reads (--direct, {timings[primary][0]:g} MB/s); "
                     "podtax's hdparm times the kernel's buffered reads, so this figure measures another cell")
    refused = [p for p in problems if "No such file" in p or any(w in p for w in _DENIED)]
    if refused:  # a run that could not open its device, beside the one timed
        flags.append(errors_flag(TOOL, refused[0][:200]))
    return Parsed(TOOL, None, None, metrics.as_tuple(), echoed, tuple(flags))


def _unsplit(text: str) -> tuple[str, list[str]]:
    """Put a timing line back together when another device's error was printed inside it (one stream: stderr
    is written at once, stdout's figures at exit), e.g. `hdparm -tT /dev/loop0 /dev/vda` without CAP_SYS_RAWIO:
    ` Timing buffered disk reads: /dev/vda: Operation not permitted` then ` 64 MB in  0.10 seconds = ...`.
    Returns the mended text and the messages taken out (they name the device, not the timed one)."""
    if "Timing" not in text:
        return text, []
    messages: list[str] = []

    def mend(m: re.Match[str]) -> str:
        messages.append(m.group(2))
        return f"{m.group(1)} {m.group(3)}"

    return _SPLIT.sub(mend, text), messages


def _flush_failed(text: str) -> str | None:
    """hdparm's `BLKFLSBUF failed: <error>` line (stderr: anywhere in the log, even inside a timing line)."""
    at = text.find("BLKFLSBUF failed")
    return None if at < 0 else text[at:].split("\n", 1)[0].strip()


def _not_flushed(flush: str, device: str | None, timed: bool) -> ParseFailure:
    """hdparm drops the device's buffer cache (BLKFLSBUF) before it times reads and goes on when it cannot: a
    buffered disk timing may then read the cache (a regular file, not a block device: `Inappropriate ioctl for
    device`; no CAP_SYS_ADMIN in a container: `Permission denied`). Refused: the figure would not be the disk's."""
    denied = any(w in flush for w in _DENIED)
    why = ("no CAP_SYS_ADMIN here: run it as root on the host" if denied else
           "is it a regular file, not a block device?" if "Inappropriate ioctl" in flush else "")
    what = ("its buffered disk reads may have come from the cache, so the disk timing is not the disk's" if timed
            else "its message broke the timing line")
    return ParseFailure("permission-denied" if denied else "fatal",
                        f"hdparm could not flush the buffer cache of {device or 'the device'} (`{flush[:200]}`"
                        f"{'; ' + why if why else ''}): {what}")


def _primary(timings: dict[str, tuple[float, float, float]], mode: str) -> str:
    if mode in ("cached", "disk"):
        for kind in (mode, f"direct_{mode}"):
            if kind in timings:
                return kind
        raise ParseFailure("truncated", f"hdparm printed no {mode} read timing although mode={mode} was "
                                        "requested")
    for kind in ("disk", "direct_disk", "cached", "direct_cached"):
        if kind in timings:
            return kind
    raise ParseFailure("unknown-format", "no usable hdparm timing")  # pragma: no cover
