"""fio's terse output (`--minimal`, `--output-format=terse`; `--terse-version=2|3|4|5`, 3 the default): one
`;`-separated line per job (per group with group_reporting), read into the document a JSON report would give
for the same jobs, so podtax.parsers.fio names, sums and checks them exactly as it does JSON (same metrics,
units, flags and failures).

A line is `3;fio-3.33;<jobname>;<groupid>;<error>` (version 2: `2;<jobname>;<groupid>;<error>`), then one block
per direction: KiB moved, bandwidth (KiB/s, the JSON report's `bw` exactly), IOPS (an integer: the JSON's
figure cut down to a whole number), runtime (ms); submission, completion and total latency (min and max in whole
µs, cut down; mean and stdev in µs to 6 decimals); 20 `<pct>%=<µs>` completion-latency percentiles (whole µs,
cut down; `0%=0` pads an unused one); 5 bandwidth statistics (version 5: 6 more). The directions are read and
write (version 3), read, write and trim (versions 2, 4 and 5), then mixed with `unified_rw_reporting=both`;
`unified_rw_reporting=1` prints one block, the mixed figures. The CPU usage (`12.3%;...`) follows the last block,
then the I/O depth and latency distributions, disk use, error counts and the job's description, none read. A
job's name is written raw: one holding `;` is joined back when exactly one joining reads whole (_named).
Version 3 prints no trim block: a trim job's line is all zeros, refused as such.

Terse echoes none of the job's options: no rw, bs, iodepth, direct, numjobs or rate cap (rate_iops, rate: nothing
in the lines tells a capped run, so no RATE_LIMITED as JSON's options give). So none is compared with the
requested parameters (no PARAM_MISMATCH from them, false or true; a run of several lines still is several jobs),
a write job's verify reads are told from the workload's by the template's rw alone (a write mode: left out,
VERIFY, as JSON's `verify` option does), and a group_reporting line, which sums its jobs under
the first one's name, reads as one job: TERSE_OUTPUT says so. Several lines of one name are numjobs' clones,
unless a later one moved more over a longer runtime (`--status-interval` prints each job again, cumulative):
refused. Runs appended to one log (`fio --minimal >> log`) would read as one run's jobs, their IOPS summed: lines
that end with different disk use (every line of a run ends with the same), alike byte for byte, or whose groupid
goes back (a run of several groups appended) are refused (see _check_appended; where fio prints no disk use, version
2 or tmpfs, runs of one group that differ go unseen). With
`--lat_percentiles=1` fio prints the total latency's percentiles in the same fields, which terse
does not tell apart: they are named clat as fio's default. A direction that moved under 1 KiB reads as none
(terse gives its KiB, not its I/O count). `fio --client=host` output is refused, as its JSON report
(`client_stats`) is, where it shows: each host's disk use on a line of its own, or an `All clients` line summing
several jobs. A client run of one job on one host that uses no disk (the null engine, tmpfs: no disk-use line)
prints neither, and its line is that of a run on the node: not detected.
"""

from __future__ import annotations

import re
from typing import Any

from podtax.parsers.base import ParseFailure

# the start of a terse line: `3;fio-3.33;` (versions 3 to 5; the rest is checked as it is read) or, version 2,
# which names no fio, `2;<jobname>;<groupid>;<error>;<KiB>`
LINE = re.compile(r"^(?:[345];fio-[0-9]|2;[^;\n]*;[0-9]+;-?[0-9]+;[0-9])", re.M)
_V2 = re.compile(r"^2;[^;\n]*;[0-9]+;-?[0-9]+;[0-9]", re.M)
TERSE_FLAG = ("TERSE_OUTPUT: parsed fio's terse output (--minimal), which echoes none of the job's options (rw, bs, "
              "iodepth, direct, numjobs, rate caps): they are not checked, and a group_reporting line (several jobs "
              "summed) reads as one job; with --lat_percentiles=1 the clat_p* figures are the total latency's "
              "percentiles (terse prints them in the same fields); use --output-format=json for the echo and exact "
              "IOPS")
_FIGURE = re.compile(r"[0-9]{1,20}(?:\.[0-9]{1,12})?")
_INT = re.compile(r"-?[0-9]{1,18}")
_BLOCK = {2: 41, 3: 41, 4: 41, 5: 47}  # fields per direction
_TAIL = 34  # CPU usage (5), I/O depths (7), µs (10) and ms (12) latency distributions
_DIRECTIONS = {3: {1: ("mixed",), 2: ("read", "write"), 3: ("read", "write", "mixed")},
               2: {1: ("mixed",), 3: ("read", "write", "trim"), 4: ("read", "write", "trim", "mixed")}}
# `fio --client=host --output-format=terse`: each host's disk use on a line of its own (client.c, handle_du; a run
# on the node ends its job lines with it), and `All clients`, the sum of every host's jobs, when there are several
_CLIENT_DU = re.compile(r"^(?:;[^;\n]+(?:;[0-9]+){7};[0-9.]+%)+$", re.M)
_NAMES = ("KiB", "bw", "iops", "runtime", "slat min", "slat max", "slat mean", "slat stdev",
          "clat min", "clat max", "clat mean", "clat stdev")


def v2_start(text: str) -> bool:
    """A version 2 line, which names no fio, in the log's first 4 KiB (fio's stderr notes may come first, such as
    `note: both iodepth >= 1 and synchronous I/O engine are selected`): one of at least 70 fields (one direction
    block and the tail), so that a short `2;...` line of another tool is not taken for one."""
    if not text.startswith("2;") and text.find("\n2;", 0, 4096) < 0:
        return False
    ends = ((m.start(), text.find("\n", m.start())) for m in _V2.finditer(text, 0, 4096))
    return any(text.count(";", start, end if end >= 0 else len(text)) >= 70 for start, end in ends)


class TerseOnly(ParseFailure):
    """fio_text's answer for a log of terse lines and no normal report: podtax.parsers.fio reads them."""

    def __init__(self) -> None:
        super().__init__("unknown-format", "fio's terse output is read by podtax.parsers.fio, not as normal text")


def document(text: str) -> dict[str, Any]:
    """The JSON report's document (`fio version`, `jobs`) for the terse lines in `text`, in their order; other
    lines (fio's stderr, a v2 description line) are left for the report's checks. ParseFailure for a line
    podtax cannot read whole: cut short, damaged, of an unknown version, or lines of several versions."""
    jobs: list[dict[str, Any]] = []
    versions: set[str] = set()
    kinds: set[int] = set()  # the terse versions
    lines: list[tuple[str, tuple[str, ...]]] = []  # each line and its disk use
    for m in LINE.finditer(text):
        end = text.find("\n", m.start())
        line = text[m.start():end if end >= 0 else len(text)].rstrip("\r")
        fields = line.split(";")
        version = int(fields[0])
        kinds.add(version)
        head = 4 if version == 2 else 5
        if len(fields) <= head:
            raise ParseFailure("truncated", f"fio's terse line `{';'.join(fields)[:60]}` is cut short")
        if version > 2:
            versions.add(fields[1])
        job, disks = _named(fields, version, head)
        jobs.append(job)
        lines.append((line if any(d in job for d in ("read", "write", "trim", "mixed")) else "", disks))
    if not jobs:
        raise ParseFailure("unknown-format", "no fio terse line (`3;fio-3.33;<job>;...`) in this log")
    _check_client(text, jobs)
    if len(versions) > 1:
        raise ParseFailure("unknown-format", f"this log holds terse lines of several fio versions "
                                             f"({', '.join(sorted(versions))}): several runs; split it, one per log")
    if 3 in kinds and not any(line for line, _ in lines) and not any(job["error"] for job in jobs):
        raise ParseFailure("unknown-format", "fio's terse lines (version 3) show no read or write I/O, and version 3 "
                                             "prints no trim figures: a trim job (rw=trim, randtrim) reads as none; "
                                             "rerun with --terse-version=4 or --output-format=json")
    _check_interim(jobs)
    _check_appended(lines, jobs)
    doc: dict[str, Any] = {"jobs": jobs}
    if versions:
        doc["fio version"] = versions.pop()
    return doc


def _check_client(text: str, jobs: list[dict[str, Any]]) -> None:
    """Refuse `fio --client=host` output, as its JSON report (`client_stats`) is: its jobs ran on other hosts, and
    the `All clients` line sums them all again (read as one more job, it doubled the IOPS)."""
    du = _CLIENT_DU.search(text) if text.find("\n;") >= 0 or text.startswith(";") else None
    if du or any(job["jobname"] == "All clients" for job in jobs):
        why = f"disk use on a line of its own, `{du.group(0)[:40]}`" if du else "an `All clients` line"
        raise ParseFailure("unknown-format", f"this is fio client/server terse output (--client: {why}): its jobs "
                                             "ran on other hosts; run fio on the node itself, one log per node")


def _check_interim(jobs: list[dict[str, Any]]) -> None:
    """Refuse `--status-interval`'s reports: every interval prints each job's line again, cumulative. Clones of
    one job (numjobs) share its name too, but run as long (time_based), or move as much (size): a later line of
    a name that moved more over a runtime over 10% longer is the same job reporting again."""
    seen: dict[tuple[str, int], tuple[float, float]] = {}
    for job in jobs:
        moved = [job[d] for d in ("read", "write", "trim", "mixed") if d in job]
        kib, runtime = sum(d["io_kbytes"] for d in moved), max((d["runtime"] for d in moved), default=0.0)
        key = (job["jobname"], job["groupid"])
        if key in seen and kib > seen[key][0] and runtime > seen[key][1] * 1.1:
            raise ParseFailure("unknown-format", f"fio's terse lines of job {key[0]} grow from {seen[key][0]:.0f} KiB "
                                                 f"in {seen[key][1]:.0f} ms to {kib:.0f} KiB in {runtime:.0f} ms: "
                                                 "--status-interval's reports, cumulative, so they must not be "
                                                 "added; keep the last one, or rerun without --status-interval")
        seen.setdefault(key, (kib, runtime))


def _check_appended(lines: list[tuple[str, tuple[str, ...]]], jobs: list[dict[str, Any]]) -> None:
    """Refuse several runs appended to one log (`fio --minimal >> log`): their lines would read as numjobs'
    clones and their IOPS be summed. fio ends every line of a run with the same disk use (`vda;24956;2;0;0;1238;
    1;1238;75.83%`, versions 3 to 5, all the run's disks), which differs from run to run; lines that differ there
    are of several runs. Version 2 prints no disk use, nor does a run on files with none (tmpfs): then only two
    lines alike byte for byte (in a run, clones differ in their µs figures) betray a second run, and runs appended
    that differ anywhere read as one run's jobs, unless their groupid goes back: fio numbers its groups in job order
    (init.c add_job: stonewall and new_group only increase it) and prints its jobs in that order, so the lines of a
    run of several groups (`0, 1`) appended twice go `0, 1, 0, 1`. Lines that moved nothing (a job that failed at
    its start, repeated alike by numjobs) are not compared byte for byte."""
    tails = {disks for _, disks in lines}
    moved = [line for line, _ in lines if line]
    back = next((f"{a['groupid']} to {b['groupid']}" for a, b in zip(jobs, jobs[1:], strict=False)
                 if b["groupid"] < a["groupid"]), "")
    if len(tails) > 1 or len(set(moved)) < len(moved) or back:
        why = ("end with different disk use" if len(tails) > 1 else "are the same byte for byte"
               if len(set(moved)) < len(moved) else f"go back from groupid {back}")
        also = " (or --status-interval printed them again)" if back and why.startswith("go back") else ""
        raise ParseFailure("unknown-format", f"several fio runs appended in one log: its terse lines {why}, which the "
                                             f"lines of one run never do{also}; split it, one run per log")


def _disk_use(fields: list[str]) -> tuple[str, ...]:
    """The disk use fio prints at the end of a line (9 fields a disk, the last `75.83%`), up to what follows
    (continue_on_error's error counts, the description)."""
    end = 0
    while end + 9 <= len(fields) and all(f.isdigit() for f in fields[end + 1:end + 8]) \
            and fields[end + 8].endswith("%") and _FIGURE.fullmatch(fields[end + 8][:-1]):
        end += 9
    return tuple(fields[:end])


def _named(fields: list[str], version: int, head: int) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The job of a line, whose name fio writes raw: a name holding `;` (up to 3) is joined back when exactly one
    such joining reads whole; otherwise the line's own failure."""
    try:
        return _job(fields, version, head)
    except ParseFailure as failure:
        first = failure
    at, found = head - 3, []
    for k in range(1, 4):
        try:
            found.append(_job(fields[:at] + [";".join(fields[at:at + k + 1])] + fields[at + k + 1:], version, head))
        except ParseFailure:
            continue
    if len(found) != 1:
        raise first
    return found[0]


def _job(fields: list[str], version: int, head: int) -> tuple[dict[str, Any], tuple[str, ...]]:
    name = fields[head - 3]
    size = _BLOCK[version]
    blocks = 0  # the directions: blocks up to the CPU usage, the first field with a `%` at a block's start
    while head + blocks * size < len(fields) and not fields[head + blocks * size].endswith("%"):
        blocks += 1
    tail = fields[head + blocks * size:head + blocks * size + _TAIL]
    if len(tail) < _TAIL or not all(field.endswith("%") for field in tail[:2] + tail[5:]):
        raise ParseFailure("truncated", f"fio's terse line of job {name} is cut short or damaged ({len(fields)} "
                                        f"fields; its CPU usage and latency distribution do not follow "
                                        f"{blocks} direction block(s) of {size} fields)")
    directions = _DIRECTIONS[3 if version == 3 else 2].get(blocks)
    if directions is None:
        raise ParseFailure("unknown-format", f"fio's terse line (version {version}) of job {name} has {blocks} "
                                             "direction blocks, a number fio does not print: the line is damaged")
    job: dict[str, Any] = {"jobname": name, "groupid": _int(fields[head - 2], "groupid", name),
                           "error": _int(fields[head - 1], "error", name)}
    for i, direction in enumerate(directions):
        block = fields[head + i * size:head + (i + 1) * size]
        stats = _direction(block, f"{name} {direction}")
        if stats is not None:
            job[direction] = stats
    return job, _disk_use(fields[head + blocks * size + _TAIL:])


def _direction(block: list[str], what: str) -> dict[str, Any] | None:
    """A direction block as the JSON report's (µs latencies: its fio 2.x form); None when it moved nothing."""
    figures = [_number(value, f"{what} {label}") for value, label in zip(block[:12], _NAMES, strict=True)]
    kib, bw, iops, runtime = figures[:4]
    if not kib:
        return None
    percentile: dict[str, float] = {}
    for entry in block[12:32]:
        key, sep, value = entry.partition("%=")
        if not sep:
            raise ParseFailure("unknown-format", f"fio's terse field `{entry[:40]}` of {what} is no percentile "
                                                 "(`99.000000%=125`): the line is damaged")
        if key != "0":  # `0%=0` pads the list
            percentile[key] = _number(value, f"{what} p{key}")
    lat_mean = _number(block[34], f"{what} lat mean")
    return {"io_kbytes": kib, "io_bytes": kib * 1024, "bw": bw, "iops": iops, "runtime": runtime,
            "clat": {"min": figures[8], "max": figures[9], "mean": figures[10], "percentile": percentile},
            "lat": {"mean": lat_mean}}


def _number(value: str, what: str) -> float:
    if not _FIGURE.fullmatch(value):  # fio's `%llu` or `%f`; float() would also take `1_0`, ` 5`, `inf`
        raise ParseFailure("unknown-format", f"fio's terse field for {what} is `{value[:40]}`, not a figure: the "
                                             "line is damaged")
    return float(value)


def _int(value: str, what: str, name: str) -> int:
    if not _INT.fullmatch(value):
        raise ParseFailure("unknown-format", f"fio's terse {what} of job {name} is `{value[:40]}`: the line is "
                                             "damaged")
    return int(value)
