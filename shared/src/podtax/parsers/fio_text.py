"""fio's default `normal` text output (fio 2.x and 3.x), for logs recorded without JSON.

Same metric names as the JSON parser (see podtax.parsers.fio). Text figures are rounded by fio
(IOPS=81.8k), so prefer JSON for new runs; the template always asks for JSON. An IOPS figure, which fio prints
cut to a whole number under 1000 (`IOPS=4` for 4.9975) and to 3 significant digits from 10,000 (`IOPS=17.6k` for
17641; fio 2.17-2.19 and 3.0-3.25 up to 9% off: `19.0k` for 19961), is read as its `issued` I/Os over its runtime,
as the JSON gives it (fio_iops.exact_iops; a figure fio would not print for that count is kept and said in
TEXT_OUTPUT). Without that line a figure is read as printed; one under 1000 (up to 1 IOPS low) is said in
TEXT_OUTPUT of an excerpt, and refused in a report that has its `IO depths` line (the `issued` line after it lost).
Those old versions' `BW=` (`20.0MiB/s` for 20.96) is read as the I/Os x the run's one block size over the runtime
when their num2str prints that so (fio_iops.exact_bw); bsrange, bssplit, other versions: as printed.
fio 3 prints rates without an `i` (`kB/s`,
`GB/s`: kb_base=1000) in powers of 1000, and in bits with unit_base=1
(`BW=12.5Gibit/s`, read as KiB/s); fio 2's `KB/s` is KiB/s, or 1000 B/s with kb_base=1000 (fio_kb_base; a log
that tells neither is read in KiB and says so in TEXT_OUTPUT), and its `Kbit/s` (unit_base=1, fio 2.1 to 2.16)
1024 bits a second, or 1000 with kb_base=1000. A failed job's message quotes fio's own error lines.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from podtax.parsers import fio_blocks, fio_flags, fio_kb_base, fio_terse
from podtax.parsers.base import (
    Echoed,
    MetricList,
    Parsed,
    ParseFailure,
    at_line_starts,
    compare_echoed,
    holds,
    parse_int,
    percentile_label,
    to_number,
)
from podtax.parsers.fio_flags import (
    STARTING,
    WRITES,
    after_start,
    drop_reads,
    errors_beside,
    exceeds,
    groups_flag,
    interrupted_flag,
    jobs_flag,
    latency_flag,
    lost_line,
    merge_echoed,
    missing_direction,
    no_io_failure,
    no_io_flag,
    rate_flag,
    rounded_runtime,
    said,
    verify_failed,
    verify_flag,
)
from podtax.parsers.fio_groups import POWER, STATUS, STATUS_WORD, io_kib, kib, staggered, unit_power
from podtax.parsers.fio_iops import COUNT_SCALE, exact_bw, exact_iops, step
from podtax.parsers.stressng_names import slug

_JOB = re.compile(r"^(\S.*?): \(groupid=(\d+), jobs=\d+\): err=\s*(-?\d+)(?:(.*?): pid=(\d+))?")  # `rr:4k: (groupid=`
# fio 3: `BW=25.3GiB/s (27.1GB/s)`, the decimal form first with kb_base=1000 (`BW=22.4GB/s (20.8GiB/s)`)
_NEW = re.compile(r"^(read|write|trim|mixed)\s*: IOPS=([\d.]+)([kMG]?), BW=([\d.]+)([kKMGTP]?)(i?)(?:B|bit)/s")
# fio 2.0 printed small rates in bytes, with a space: `bw=269100 B/s`; up to 2.16 a million IOPS and more with an
# upper-case K (`iops=1258.3K`: num2str's postfix then was `K`, powers of 1000 for IOPS)
# 2.1 to 2.16 print a rate in bits with unit_base=1 (`bw=639393Kbit/s`: K is 1024, or 1000 with kb_base=1000)
_OLD = re.compile(r"^(read|write|trim|mixed)\s*: io=\S+, bw=([\d.]+) ?([KMGT]?i?(?:B|bit))/s, "
                  r"iops=([\d.]+)([kKMG]?)\s*,")
_DIRECTION = re.compile(r"^(read|write|trim|mixed)\s*:")  # a direction's first line, in any form
_CLAT = re.compile(r"^clat \((nsec|usec|msec)\):\s*min=\s*([\d.]+)([kKM]?) ?, max=\s*([\d.]+)([kKM]?) ?, "
                   r"avg=\s*([\d.]+) ?,(?!\d)")  # `, stdev=` follows: a line cut inside the mean does not match
_LAT = re.compile(r"^lat \((nsec|usec|msec)\):\s*min=[^,]*, max=[^,]*, avg=\s*([\d.]+) ?,(?!\d)")  # total latency
_DECIMAL_COMMA = re.compile(r"=\s*[0-9]+,[0-9]")  # `avg=353,07, stdev=41,33`: not fio's (a point in any locale)
_PCT_HEAD = re.compile(r"^(c?lat) percentiles \((nsec|usec|msec)\):")  # lat: `--lat_percentiles=1`, total latency
_PCT = re.compile(r"(?<![\d.])(\d{1,3}\.\d{1,6})th=\[\s*(\d+)\]")  # bounded: a run of 5,000 digits scanned in O(n^2)
_STARTING = STARTING  # `Starting 4 processes`
_JOBS = re.compile(r"^[ \t]*\S[^\n]*?: \(groupid=[0-9]+, jobs=([0-9]{1,6})\)", re.M)  # each report's job count
# `--unified_rw_reporting=both`: fio 3.33 prints the mixed section's rates as zeros without units
_MIXED_UNPRINTED = re.compile(r"^mixed\s*: IOPS=0, BW=0 \(0\)")
_VERSION = re.compile(r"^fio-(\d\S*)$")
# `issued rwts: total=0,2226350,0,0` (3.x), `issued rwt: total=...`, `issued    : total=r=54217/w=13770/d=0` (2.x)
# `issued r/w/d: total=0/74607/0, short=0/0/0` (1.5x to early 2.0.x) and `issued r/w: total=256/0, short=0/0` (1.x)
_ISSUED = re.compile(r"^issued\s*(?:rwts?|r/w(?:/d)?)?\s*: total="
                     r"(?:r=)?([0-9]+)[,/](?:w=)?([0-9]+)(?:[,/](?:d=)?([0-9]+))?")
# a rate cap: a job file's `rate_iops=350,150` (or rate, rate_min...), the command line's `--rate_iops=5`, or the
# progress line's `, 0-5000 IOPS: [`
_RATE = re.compile(r"(?:^[ \t]*|--)((?:rate|rate_iops|rate_min|rate_iops_min)[ \t]*=[ \t]*[0-9][^\s#;]*)"
                   r"|\), 0-([0-9.]+[kMG]?) IOPS: \[", re.M)
# `fio --client=host`: every line of a host behind `<host> `, its jobs summed under `All clients:`
_CLIENT = re.compile(r"^(?:<[\w.:-]+> \S|All clients: \(groupid=|hostname=[^,\n]+, be=[0-9]+, )", re.M)
_GUARD = ("read", "write", "trim", "mixed", "clat", "lat ", "issued")  # how the lines matched below start
# fio 3's job line ends `(4096KiB/34msec)`, its group line `io=8192KiB (8389kB), run=34-36msec`
_SPAN = re.compile(r"\(([\d.]+)([kKMGTP]?)(i?)B/([0-9]{1,12})msec\)")
# a fio 2 rate left as printed (KiB) where the log does not tell its kb_base (fio_kb_base)
UNDECIDED_BASE = ("; fio 2 prints `KB/s` (and `Kbit/s`) alike for kb_base=1024 and 1000, and this log tells neither "
                  "(IOPS under 500 or block sizes unknown, `io=` not in plain bytes): its rates are read in powers of "
                  "1024, up to 2.4% high (`K`), 4.9% (`M`) or 7.4% (`G`) if the run had kb_base=1000")
_UNTOLD = ("; fio prints a rate under 1000 IOPS cut to a whole number (4.99 as 4), and this log has no `issued` line "
           "to tell it exactly (an excerpt): up to 1 IOPS low: ")
_DIFFER = ("; an IOPS figure is not what fio prints for its `issued` I/Os over its runtime (a hand-edited or spliced "
           "log?), kept as printed: ")
_BW_OFF = ("; a `BW=` figure is not what this fio prints for its `issued` I/Os x its block size over its runtime "
           "(short I/Os, or a hand-edited log?), kept as printed: ")
_IO_BYTES = re.compile(r"io=([0-9]{1,6})B, ")  # fio 2's `io=` in plain bytes (under 10^6): fio_kb_base
_RUNT = re.compile(r"runt=\s*([0-9]{1,12})msec")  # fio 2's job runtime: `read : io=..., iops=92042, runt=  178msec`
_TIME_SCALE = {"nsec": 0.001, "usec": 1.0, "msec": 1000.0}


def _rate_in(text: str) -> str:
    m = _RATE.search(text) if holds(text, "rate") or holds(text, " IOPS: [") else None
    return "" if m is None else m.group(1) or f"{m.group(2)} IOPS at most"


def parse(text: str, requested: Mapping[str, Any] | None = None) -> Parsed:
    version: str | None = None
    heads: list[Echoed] = []  # each job's header line (`randread: (g=0): rw=randread, bs=(R) 4096B-...`)
    blocks: list[dict[str, int]] = []  # each header's fixed block size per direction (fio_blocks.fixed_sizes)
    jobs: list[tuple[str, str, dict[str, float]]] = []  # (job name, group id, figures)
    direction = ""
    pct_scale = 0.0
    pct_kind = "clat"  # whose percentiles the `|` rows are: `clat`, or `lat` (the total latency)
    pct_head = ""
    rows_due = False  # a `clat percentiles` header read, its first `|` row not yet
    runs = 0  # `fio-<version>` lines: fio prints one per invocation
    reported: set[tuple[str, str]] = set()  # (job name, pid) of each job report
    repeated = ""  # the first job that reported twice
    lats: dict[tuple[int, str], float] = {}  # (job number from 1, direction) -> mean total latency, µs
    spans: dict[tuple[int, str], float] = {}  # (job number from 1, direction) -> its KiB over its runtime, KiB/s
    runtimes: dict[tuple[int, str], int] = {}  # (job number from 1, direction) -> its runtime, ms (rounded up)
    steps: dict[tuple[int, str], float] = {}  # (job number from 1, direction) -> its IOPS figure's last digit's unit
    bws: dict[tuple[int, str], tuple[float, float, int, int]] = {}  # `BW=` figures as fio_iops.exact_bw takes them
    printed: dict[tuple[int, str], int] = {}  # (job number from 1, direction) -> the power of fio 2's `KB/s`, `MB/s`
    exact: dict[tuple[int, str], float] = {}  # (job number, direction) -> B/s from a plain-bytes `io=` and `runt=`
    percentiles: set[tuple[int, str, str]] = set()  # (job number from 1, direction, kind) of each percentile block
    issued: set[int] = set()  # the job numbers (from 1) whose report reached its `issued` line, near its end
    counts: dict[tuple[int, str], int] = {}  # (job number from 1, direction) -> its I/Os (`issued ... total=`)
    status = False  # a `Run status group` line read
    late = ""  # the first job reporting after a `Run status group` summary (fio prints those after all jobs)
    unprinted: set[int] = set()  # the job numbers (from 1) whose mixed section prints no rate
    client = _CLIENT.search(text) if text.find("<") >= 0 or holds(text, "All clients") \
        or holds(text, "hostname=") else None
    if client:  # the JSON of such a run is refused the same way (`client_stats`)
        raise ParseFailure("unknown-format", f"this is fio client/server output (--client: "
                                             f"`{client.group(0)[:40]}`): its jobs ran on other hosts; run fio on the "
                                             "node itself, one log per node")
    noop = fio_flags.no_io_jobs(text)  # {job: its `(noop)` line}: jobs whose engine does no I/O (cpuio)
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if pct_scale and line.startswith("|"):
            if line.count("[") != line.count("]"):  # `20.00th=[` and its figure on the next line: wrapped
                raise ParseFailure("unknown-format", f"fio's percentile rows are wrapped (`{line[-30:]}` goes on in "
                                                     "the next line: a mail or a terminal folded them); unwrap the "
                                                     "log, or rerun with --output-format=json")
            into = jobs[-1][2]
            for key, value in _PCT.findall(line):
                into[pct_head + percentile_label(key)] = to_number(value) * pct_scale
            rows_due = False
            continue
        if rows_due:  # `clat percentiles (usec):` (or `lat`) and then no `|` row: cut there
            break
        pct_scale = 0.0
        m = _VERSION.match(line) if line.startswith("fio-") else None
        if m:
            runs += 1
            version = m.group(1)
            continue
        echo = fio_blocks.head(line) if "(g=" in line else None
        if echo is not None:
            heads.append(echo)
            blocks.append(fio_blocks.fixed_sizes(line))
            continue
        m = _JOB.match(line) if "(groupid=" in line else None
        if m:
            if parse_int(m.group(3).removeprefix("-")) != 0:  # None (too long to read) is not 0
                raise ParseFailure("fatal", f"fio job {m.group(1)} failed with err={m.group(3)}{m.group(4) or ''}"
                                            f"{said(text)}")
            if m.group(5) and (m.group(1), m.group(5)) in reported and not repeated:
                repeated = f"{m.group(1)} (pid {m.group(5)})"  # the same process again: --status-interval
            reported.add((m.group(1), m.group(5)))
            late = late or (m.group(1) if status else "")
            jobs.append((m.group(1), m.group(2), {}))
            direction = ""  # each job's figures start with a direction line of its own
            continue
        if not jobs:
            continue
        figures = jobs[-1][2]
        if not line.startswith(_GUARD):  # none of the patterns below can match
            status = status or (line[0] == "R" and line.startswith("Run status group "))
            continue
        if line[0] == "i":
            m = _ISSUED.match(line)
            if m:
                issued.add(len(jobs))
                for d, n in zip(("read", "write", "trim"), m.groups(), strict=True):
                    if n is not None and len(n) < 19:
                        counts[(len(jobs), d)] = int(n)
                # a direction with I/O issued has its line (unless unified: `mixed`)
                lost = next((d for d, n in zip(("read", "write", "trim"), m.groups(), strict=True)
                             if n not in (None, "0") and f"{d}_iops" not in figures), None)
                missing_direction(jobs[-1][0], lost, noop, figures)  # raises unless a no-I/O job's (cpuio)
            continue
        if line[0] == "l":  # `lat (usec): min=...` (the total latency), or its distribution `lat (usec)   : 250=..`
            m = _LAT.match(line)
            if m:  # kept beside the figures, checked against clat below (not a metric)
                if not direction:
                    raise lost_line(jobs[-1][0], "")
                lats[(len(jobs), direction)] = to_number(m.group(2)) * _TIME_SCALE[m.group(1)]
            if m or not line.startswith("lat percentiles"):
                continue
        # a direction's line (`read: ...`); `clat ...` and `lat percentiles` lines match none of the next four
        at_direction = line[0] != "c" and line[0] != "l"
        m = _NEW.match(line) if at_direction else None
        if m:
            direction = m.group(1)
            figures[f"{direction}_iops"] = to_number(m.group(2)) * COUNT_SCALE[m.group(3)]
            steps[(len(jobs), direction)] = step(m.group(2), m.group(3))
            thousand, bits = 1024 if m.group(6) else 1000, 8 if m.group(0)[-5] == "b" else 1  # `12.5Gibit/s`
            scale = thousand ** POWER[m.group(5)] / (1024 * bits)  # KiB/s
            figures[f"{direction}_bw"] = to_number(m.group(4)) * scale
            bws[(len(jobs), direction)] = (figures[f"{direction}_bw"], step(m.group(4), "") * scale, thousand, bits)
            span = _SPAN.search(line, m.end())
            if span:
                runtimes[(len(jobs), direction)] = int(span.group(4))
            if span and span.group(4) != "0":  # `(4096KiB/34msec)`: finer than the rate's 3 digits
                spans[(len(jobs), direction)] = io_kib(span) * 1000 / int(span.group(4))
            continue
        m = _OLD.match(line) if at_direction else None
        if m:
            direction = m.group(1)
            figures[f"{direction}_bw"] = kib(m.group(2), m.group(3))
            printed[(len(jobs), direction)] = unit_power(m.group(3))
            figures[f"{direction}_iops"] = to_number(m.group(4)) * COUNT_SCALE[m.group(5)]
            steps[(len(jobs), direction)] = step(m.group(4), m.group(5))
            if runt := _RUNT.search(line, m.end()):
                runtimes[(len(jobs), direction)] = int(runt.group(1))
                if (io := _IO_BYTES.match(line, line.find("io="))) and runt.group(1) != "0":  # fio_kb_base
                    exact[(len(jobs), direction)] = int(io.group(1)) * 1000 / int(runt.group(1))
            continue
        if at_direction and _MIXED_UNPRINTED.match(line) and ("read_iops" in figures or "write_iops" in figures):
            direction = "mixed"  # the sum of the sections above, its rates unprinted: its figures are left out
            unprinted.add(len(jobs))
            continue
        m = _DIRECTION.match(line) if at_direction else None
        if m:  # unread, its latencies would be taken for the previous direction's
            raise ParseFailure("unknown-format", f"fio's {m.group(1)} line is in a form podtax does not read: "
                                                 f"{line[:200]}; rerun with --output-format=json")
        m = _CLAT.match(line)
        if m is None and line.startswith("clat (") and _DECIMAL_COMMA.search(line):
            raise ParseFailure("unknown-format", f"fio's figures are written with a decimal comma ({line[:80]}): fio "
                                                 "prints a point in any locale, so the log was converted (by a "
                                                 "spreadsheet?); parse fio's own output")
        if m:
            # no direction yet, or this one's latencies again: a lost `write:` line (its latencies would replace read's)
            if not direction or f"{direction}_clat_mean" in figures:
                raise lost_line(jobs[-1][0], direction)
            scale = _TIME_SCALE[m.group(1)]
            figures[f"{direction}_clat_min"] = to_number(m.group(2)) * COUNT_SCALE[m.group(3)] * scale
            figures[f"{direction}_clat_mean"] = to_number(m.group(6)) * scale
            figures[f"{direction}_clat_max"] = to_number(m.group(4)) * COUNT_SCALE[m.group(5)] * scale
            continue
        m = _PCT_HEAD.match(line)
        if m:
            if not direction or (len(jobs), direction, m.group(1)) in percentiles:  # as above, without clat lines
                raise lost_line(jobs[-1][0], direction)
            percentiles.add((len(jobs), direction, m.group(1)))
            pct_kind, pct_scale, rows_due = m.group(1), _TIME_SCALE[m.group(2)], True
            pct_head = f"{direction}_{pct_kind}_"  # its rows' metric names, before each percentile's label
    if rows_due:
        raise ParseFailure("truncated", f"fio job {jobs[-1][0]} prints `{pct_kind} percentiles` and then no "
                                        "percentile: the log was cut there")
    if runs > 1:  # appended runs: their jobs would be summed as if they had run side by side
        raise ParseFailure("unknown-format", f"this log holds {runs} fio runs ({runs} `fio-{version}` lines); "
                                             "split it, one run per log")
    started = sum(int(m.group(1)) for m in at_line_starts(_STARTING, text, "Starting "))
    reported = sum(int(m.group(1)) for m in at_line_starts(_JOBS, text, ": (groupid="))
    if issued and len(jobs) not in issued and "Run status group" not in text:  # an excerpt has no `issued` line
        raise ParseFailure("truncated", f"the fio log stops inside the report of job {jobs[-1][0]} (no `issued` "
                                        "line, no `Run status group`): its figures may be cut short")
    words = said(text) if jobs and reported < started else ""
    if "err=" in words:  # a job that failed to start: its error says why
        raise ParseFailure("fatal", f"fio started {started} job process(es) but only {reported} reported; a job "
                                    f"failed{words}")
    if jobs and reported < started:  # cut (killed) before its later jobs reported: their sum would be short
        raise ParseFailure("truncated", f"fio started {started} job process(es) but only {reported} reported: the "
                                        "log was cut before the rest (summing the jobs present would be short)")
    if repeated:
        raise ParseFailure("unknown-format", f"fio job {repeated} reports several times (--status-interval): its "
                                             "reports are cumulative, so they must not be added; keep the last "
                                             "one, or rerun without --status-interval")
    # one `Run status group N (all jobs):` per group and run (counted first: most logs have one group)
    statuses = [m.group(1) for m in at_line_starts(STATUS, text, STATUS_WORD)] \
        if text.count(STATUS_WORD) > 1 else []
    if len(statuses) > len(set(statuses)):  # two runs, the second's `fio-<version>` line lost
        raise ParseFailure("unknown-format", f"this log holds several fio runs (`Run status group "
                                             f"{statuses[0]}` printed {statuses.count(statuses[0])} times); "
                                             "split it, one run per log")
    if late:
        raise ParseFailure("unknown-format", f"fio job {late} reports after the run's `Run status group` summary, "
                                             "which fio prints after every job's report: the log's lines are out "
                                             "of order")
    told, differ = exact_iops(jobs, runtimes, counts, steps, version)
    untold = [label for _, label in told]
    sizes = {d: size for d in ("read", "write", "trim") if len({b.get(d) for b in blocks}) == 1
             and (size := blocks[0].get(d)) is not None}  # one size for all the run's jobs
    off = exact_bw(bws, runtimes, counts, sizes, version, jobs)
    if untold and text.count("IO depths") > len(issued):  # fio prints `issued` after it in every report (1.x to 3.x)
        lost = told[0][0]  # the first job whose figure needs the count
        raise ParseFailure("truncated", f"fio job {jobs[lost - 1][0]}'s report has its `IO depths` line but not the "
                                        "`issued` line fio prints after it (the log was cut there, or a line is "
                                        "lost), and without that count its IOPS printed cut to a whole number under "
                                        f"1000 cannot be read ({', '.join(untold[:4])}: up to 1 IOPS low)")
    for number in unprinted:
        figures = jobs[number - 1][2]
        for key in [k for k in figures if k.startswith("mixed_")]:
            del figures[key]
    echoed = merge_echoed(heads)
    suspect = _drop_inconsistent(jobs, lats)
    decimal, undecided = fio_kb_base.read_decimal_rates(text, jobs, printed, exact)  # kb_base=1000 or 1024
    for _name, _group, figures in jobs:  # a latency fio did not measure prints `[    0]` percentiles
        for direction in {key.split("_", 1)[0] for key in figures}:
            for kind in ("clat", "lat"):
                start = f"{direction}_{kind}_"
                unmeasured = [key for key in figures if key.startswith(start)]
                if unmeasured and not any(figures[key] for key in unmeasured):
                    for key in unmeasured:
                        del figures[key]
    verified = echoed.get("rw") in WRITES and drop_reads(jobs)  # a write job's verify pass
    ran = [(f"{jobs[n - 1][0]} {d}", ms) for (n, d), ms in runtimes.items() if f"{d}_iops" in jobs[n - 1][2]]
    grouped, jobs = fio_flags.grouped_no_io(noop, jobs), [job for job in jobs if job[2]]
    if not jobs:
        if noop:
            raise no_io_failure(next(iter(noop.values())))
        if fio_terse.LINE.search(text):  # `--minimal`: terse lines, no normal report (its job's error quoted there)
            raise fio_terse.TerseOnly
        words = said(text) or verify_failed(text) or after_start(text)
        if words:
            raise ParseFailure("fatal", f"fio stopped before any job reported its figures{words}")
        if version or echoed:
            raise ParseFailure("truncated", "the fio log stops before any job reported its figures")
        if text.find("FIO test results:") >= 0:  # kubestr's summary (`IOPS=155.228043 BW(KiB/s)=636`)
            raise ParseFailure("unknown-format", "this is kubestr's summary of a fio run, not fio's output: rerun "
                                                 "`kubestr fio -o json` and parse the fio report it holds")
        raise ParseFailure("unknown-format", "neither a fio JSON report nor fio's normal text output")
    if grouped:  # a cpuio job among the I/O jobs of a group_reporting report
        raise grouped
    metrics = MetricList()
    totals: dict[str, float] = {}
    groups = len({group for _, group, _ in jobs})
    slugs = [slug(name) or "job" for name, _, _ in jobs]
    named = Counter(slugs)
    for i, (_name, group, figures) in enumerate(jobs):
        prefix = "" if len(jobs) == 1 else f"{slugs[i]}_{i}_" if named[slugs[i]] > 1 else f"{slugs[i]}_"
        for key, value in figures.items():
            unit = "IOPS" if key.endswith("_iops") else "KiB/s" if key.endswith("_bw") else "µs"
            metrics.add(prefix + key, value, unit, unit != "µs")
            if unit != "µs":  # jobs of different groups ran one after another: summed per group
                total = f"group{group}_{key}" if groups > 1 else key
                totals[total] = totals.get(total, 0.0) + value
    if len(jobs) > 1:
        for key, value in totals.items():
            metrics.add(key, value, "IOPS" if key.endswith("_iops") else "KiB/s", True)
    flags = ["TEXT_OUTPUT: parsed fio's rounded text output; use --output-format=json for exact figures"
             + (UNDECIDED_BASE if undecided else "") + (_UNTOLD + ", ".join(untold[:4]) if untold else "")
             + (_DIFFER + "; ".join(differ[:4]) if differ else "") + (_BW_OFF + "; ".join(off[:4]) if off else "")]
    if groups > 1:
        flags.append(groups_flag(groups))
    if len(jobs) > 1:
        flags += staggered(text, jobs, spans, decimal)
    if suspect:
        flags.append(latency_flag(suspect))
    if verified:
        flags.append(verify_flag([name for name, _, _ in jobs]))
    flags += interrupted_flag(text) + rate_flag(_rate_in(text)) + errors_beside(text) + no_io_flag(noop)
    flags += rounded_runtime(ran) + fio_flags.short_runtime(ran, requested)
    flags += compare_echoed(requested, echoed, ("rw", "bs", "iodepth")) + fio_flags.capped_depth(echoed, text)
    if requested is not None and max(reported, len(jobs)) > 1:  # `jobs=2` (group_reporting) or two reports
        flags.append(jobs_flag(max(reported, len(jobs))))
    return Parsed("fio", version, None, metrics.as_tuple(), echoed, tuple(flags))


def _drop_inconsistent(jobs: list[tuple[str, str, dict[str, float]]], lats: dict[tuple[int, str], float]) -> list[str]:
    """Leave out the clat figures of each job direction whose mean clat exceeds its mean lat (see exceeds)."""
    suspect = []
    for (number, direction), lat in lats.items():
        name, _group, figures = jobs[number - 1]
        clat = figures.get(f"{direction}_clat_mean")
        if clat is not None and exceeds(clat, lat):
            suspect.append(f"{name} {direction} (clat {clat:.6g} µs, lat {lat:.6g} µs)")
            for key in [k for k in figures if k.startswith(f"{direction}_clat_")]:
                del figures[key]
    return suspect
