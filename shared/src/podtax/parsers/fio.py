"""fio `--output-format=json` reports (and, for old logs, the default `normal` text output and the terse
output, `--minimal`: see podtax.parsers.fio_text and podtax.parsers.fio_terse).

Per job and direction (read, write, trim) that did I/O: `<dir>_iops` (IOPS), `<dir>_bw` (KiB/s),
`<dir>_clat_min|mean|max` and `<dir>_clat_p<percentile>` (µs; `p99_9` is the 99.9th); with
`--lat_percentiles=1` fio also (or, with `--clat_percentiles=0`, only) gives percentiles of the total latency
(submission and completion), `<dir>_lat_p<percentile>`, never stored under a clat name. With ONE job
the names are exactly these. With SEVERAL jobs (no group_reporting) each job's metrics are
prefixed with its name (`<jobname>_read_iops`, `_<index>` added when names repeat) and the
unprefixed `<dir>_iops` / `<dir>_bw` are the SUMS over the jobs (percentiles are not aggregated);
jobs in several groups (stonewall, new_group) ran one after another, so they are summed per group
(`group<id>_<dir>_iops`) and flagged GROUPS. A group whose jobs' summed rate is over 3% above its KiB over
its longest job's runtime (fio's own group figure, what the text's `Run status group` prints) is flagged
STAGGERED, as in text: the jobs did not all run side by side. A latency fio did not measure (gtod_reduce=1: all zeros,
N = 0) is left out rather than read as 0 µs; so are the clat figures of a job direction whose mean
clat exceeds its mean lat (lat = slat + clat for every I/O: an engine's bug), flagged
INCONSISTENT_LATENCY. Echoed options shared by all jobs are given as they are; options that differ
between jobs are joined in job order (`numjobs=1,5,10`), so no single job stands for the run; a job
mixing block sizes (`bssplit`, over bs, or `bsrange`; text: `bs=(R) 4096B-64.0KiB`) in the directions
its rw uses echoes them as its bs (see podtax.parsers.fio_blocks).
`unified_rw_reporting` gives `mixed_*` figures (the primary when the run's direction has none; in text,
`=both` prints the mixed rates as zeros after the read and write sections: that section is left out); a
trim run's primary is `trim_iops`. The reads of a write-only job are its verify pass: left out and
flagged VERIFY (terse lines echo no rw: the reads of a job run for a requested write mode). `fio: terminating
on signal` is flagged INTERRUPTED. A direction whose `runtime` is 20 ms or less (fio rounds it up to whole ms,
so its IOPS and bandwidth may be over 5% low) is flagged ROUNDED_RUNTIME. Syncs timed between the writes
(`fsync=N`, `fdatasync=N`: a `sync` latency block) are flagged PARAM_MISMATCH: the template issues none. So,
with params given (a run, an import), are reports of several jobs (`numjobs`, job sections: the template runs one;
in text, `jobs=N` or several job reports), JSON reports of a mixed mode at another read share than 50% (`rwmixread`,
`rwmixwrite`: the template sets neither) and JSON reports of another `direct` than requested (fio's default,
echoed as nothing, is 0; the text does not echo it).
A job reporting twice in text (`--status-interval`, cumulative) is refused, as are several JSON reports.
A job whose engine does no I/O (cpuio: its `<job> (noop): ioengine=` line, printed on stdout only, or `ioengine`
cpuio in the JSON job's options) is left out, flagged PARAM_MISMATCH; a run of it alone, or of it within a group
reported as one job (group_reporting: its loops counted in the group's read IOPS), is refused.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import orjson

from podtax.parsers import fio_blocks, fio_flags, fio_terse, fio_text
from podtax.parsers.base import (
    Echoed,
    MetricList,
    Parsed,
    ParseFailure,
    compare_echoed,
    holds,
    parse_int,
    percentile_label,
    same_value,
)

TOOL = "fio"
DIRECTIONS = ("read", "write", "trim", "mixed")  # mixed: unified_rw_reporting=1
_TRIMS = ("trim", "randtrim")
_MIXED_RW = ("rw", "randrw", "readwrite")
_ECHO = ("rw", "bs", "size", "iodepth", "direct", "ioengine", "runtime", "numjobs")
_RATE_KEYS = frozenset(("rate", "rate_iops", "rate_min", "rate_iops_min"))
_SLUG = re.compile(r"[^A-Za-z0-9]+")
_DENIED_ERRNO = {1, 13}
_DECODER = json.JSONDecoder()
_SYNC_LAT = re.compile(r"^[ \t]*sync \((?:nsec|usec|msec)\): min=", re.M)  # `fsync=N`'s timed syncs (text)


def parse(text: str, test: str | None = None, requested: Mapping[str, Any] | None = None,
          recorded_version: str | None = None) -> Parsed:
    version_at = text.find('"fio version"')
    if version_at < 0 or text.find("{") < 0:
        try:
            parsed = fio_text.parse(text, requested)
        except fio_terse.TerseOnly:  # only terse lines (`--minimal`): the JSON report's reading, without its options
            return _report(fio_terse.document(text), text, requested, echoes=False)
        if not (holds(text, "sync (") and _SYNC_LAT.search(text)):  # the regex alone tries every position
            return parsed
        flags = (*parsed.flags, *fio_flags.sync_flag(""))
        return Parsed(TOOL, parsed.tool_version, None, parsed.metrics, parsed.echoed, flags)
    # the report's `{` is the one right before its first key, "fio version": other output before the
    # report (a wrapper's `METADATA START {...}` line, fio's stderr) may hold braces of its own
    start = text.rfind("{", 0, version_at)
    start = start if start >= 0 else text.find("{")
    reports = text.count('"fio version"')
    if reports > 1:  # appended runs, or --status-interval's interim reports: the first is not the answer
        raise ParseFailure("unknown-format", f"this log holds {reports} fio JSON reports (runs appended to one "
                                             "log, or --status-interval); split it, one report per log")
    try:
        doc = _load(text, start)
        if isinstance(doc, dict) and "fio version" not in doc:  # a nested object: keys sorted (`jq -S`),
            line = text.rfind("\n{", 0, version_at)  # `disk_util` before "fio version"; the report's `{`
            doc = _load(text, line + 1 if line >= 0 else text.find("{"))  # then opens a line, or the text
    except (ValueError, RecursionError) as exc:
        words = fio_flags.said(text[:start])  # fio's error before a report it did not finish: the cause
        if words:
            raise ParseFailure("fatal", f"fio failed and its JSON report is incomplete{words}") from None
        raise ParseFailure("truncated", f"the fio JSON report is incomplete or damaged ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        if isinstance(doc, dict) and "client_stats" in doc:  # `fio --client=host`: one report for many hosts
            raise ParseFailure("unknown-format", "this is a fio client/server report (--client): its jobs ran on "
                                                 "other hosts (`client_stats`); run fio on the node itself, one "
                                                 "report per node")
        raise ParseFailure("unknown-format", "the fio JSON report has no `jobs` list")
    return _report(doc, text, requested)


def _report(doc: dict[str, Any], text: str, requested: Mapping[str, Any] | None, echoes: bool = True) -> Parsed:
    """The figures and flags of a JSON report's document; `echoes` False for one built from terse lines
    (podtax.parsers.fio_terse), which echo no options: none is compared, and TERSE_OUTPUT says so."""
    jobs = [j for j in doc["jobs"] if isinstance(j, dict)]
    if not jobs:
        raise ParseFailure("truncated", "the fio JSON report lists no jobs")
    version = str(doc.get("fio version", "")).removeprefix("fio-") or None
    _check_errors(jobs, text)
    metrics = MetricList()
    names = _job_prefixes(jobs) if len(jobs) > 1 else [""]
    groups = sorted({g for g in (j.get("groupid", 0) for j in jobs) if isinstance(g, int)})
    totals: dict[str, list[float]] = {}
    spans: dict[tuple[Any, str], list[float]] = {}  # (group, direction): KiB, longest runtime ms, summed bw
    suspect: list[str] = []  # job directions whose clat exceeds their lat (left out)
    verified: list[str] = []  # write jobs whose reads are their verify pass (left out)
    runtimes: list[tuple[str, float]] = []  # each direction read and its runtime (ms, rounded up by fio)
    asked = "" if echoes else str((requested or {}).get("rw") or "")  # terse echoes no rw: the template's
    for job, prefix in zip(jobs, names, strict=True):
        for direction in DIRECTIONS:
            stats = job.get(direction)
            if not isinstance(stats, dict) or not _number(stats.get("total_ios", stats.get("io_bytes"))):
                continue
            if not _number(stats.get("io_bytes", 1)) and not _number(stats.get("runtime", 1)):
                continue  # I/Os of no bytes in no time (cpuio): rates of 0 that are no measurement
            if direction == "read" and _verifies(doc, job, asked):
                verified.append(str(job.get("jobname", "?")))
                continue
            iops, bw = _job_direction(stats, prefix + direction, metrics, suspect)
            if isinstance(stats.get("runtime"), (int, float)):  # noqa: UP038 - the tuple is faster
                runtimes.append((f"{job.get('jobname', '?')} {direction}", _number(stats["runtime"])))
            # jobs of different groups (stonewall, new_group) ran one after another: summed per group
            group = f"group{job.get('groupid', 0)}_" if len(groups) > 1 else ""
            agg = totals.setdefault(group + direction, [0.0, 0.0])
            agg[0] += iops
            agg[1] += bw
            _span(spans, job.get("groupid", 0), direction, stats, bw)
    engines = [_options(doc, job).get("ioengine") for job in jobs]
    noop, grouped = fio_flags.json_no_io(text, jobs, engines)  # cpuio jobs; one within a group_reporting group
    if grouped and totals:
        raise grouped
    if len(jobs) > 1:
        for direction, (iops, bw) in totals.items():
            metrics.add(f"{direction}_iops", iops, "IOPS", True)
            metrics.add(f"{direction}_bw", bw, "KiB/s", True)
    if not totals:
        header = fio_flags.no_io(text) or ("ioengine=cpuio" if any(e == "cpuio" for e in engines) else "")
        if header:  # the `(noop)` line precedes the JSON on stdout; a JSON cut out alone still echoes its engine
            raise fio_flags.no_io_failure(header)
        raise ParseFailure("unknown-format", "fio reports no completed I/O in any job (total_ios is 0)")
    echoed = fio_flags.merge_echoed([_echoed(doc, job) for job in jobs
                                     if _options(doc, job).get("ioengine") != "cpuio"])  # no I/O: left out
    flags = compare_echoed(requested, echoed, ("rw", "bs", "iodepth")) + _template_shape(requested, echoed, len(jobs),
                                                                                         echoes)
    if not echoes:
        flags.append(fio_terse.TERSE_FLAG)
    if len(groups) > 1:
        flags.append(fio_flags.groups_flag(len(groups)))
    if len(jobs) > 1:
        flags += _staggered(spans)
    if suspect:
        flags.append(fio_flags.latency_flag(suspect))
    if verified:
        flags.append(fio_flags.verify_flag(verified))
    flags += fio_flags.interrupted_flag(text) + fio_flags.rate_flag(_rate_options(doc, jobs))
    flags += fio_flags.rounded_runtime(runtimes) + fio_flags.short_runtime(runtimes, requested)
    flags += fio_flags.errors_beside(text) + fio_flags.timed_syncs(jobs) + fio_flags.no_io_flag(noop)
    flags += fio_flags.capped_depth(echoed, text) if echoes else []
    if requested is not None and echoes:
        flags += fio_flags.rwmix_flag([(doc.get("global options") or {}, job.get("job options") or {}) for job in jobs])
    if len(groups) == 1:
        _require_primary(metrics, requested, echoed)
    if echoes and holds(text, "(groupid="):  # --output-format=json,normal prints both; two runs appended look the same
        flags.append("MIXED_OUTPUT: the log holds fio's JSON report and a normal text report (one run with "
                     "--output-format=json,normal, or two runs appended); figures come from the JSON report")
    return Parsed(TOOL, version, None, metrics.as_tuple(), echoed, tuple(flags))


def _load(text: str, start: int) -> Any:
    """The JSON document at `start`: orjson (3x faster) when it reads it as the json module does, else
    json's raw_decode (which also reads a document followed by other output, e.g. fio's stderr).
    orjson turns integers beyond 64 bits into floats: where the type matters (a job's error code, its
    name, the version), a float sends the document to json."""
    try:
        doc = orjson.loads(text[start:])
    except orjson.JSONDecodeError:
        return _DECODER.raw_decode(text, start)[0]
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if isinstance(doc.get("fio version"), float) or (isinstance(jobs, list) and any(
            isinstance(job, dict) and (isinstance(job.get("error"), float) or isinstance(job.get("jobname"), float))
            for job in jobs)):
        return _DECODER.raw_decode(text, start)[0]
    return doc


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):  # noqa: UP038 - the tuple is faster
        return 0.0
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float is infinite (then refused as not finite)
        return math.inf if value > 0 else -math.inf


def _field(stats: Mapping[str, Any], key: str, what: str) -> float:
    value = stats.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):  # noqa: UP038 - the tuple is faster
        raise ParseFailure("unknown-format", f"fio JSON has no numeric `{key}` for {what}")
    return _number(value)


def _job_direction(stats: Mapping[str, Any], name: str, metrics: MetricList,
                   suspect: list[str]) -> tuple[float, float]:
    iops = _field(stats, "iops", name)
    bw = _field(stats, "bw", name)
    metrics.add(f"{name}_iops", iops, "IOPS", True)
    metrics.add(f"{name}_bw", bw, "KiB/s", True)
    clat, lat, scale = stats.get("clat_ns"), stats.get("lat_ns"), 1000.0
    if not isinstance(clat, dict):
        clat, lat, scale = stats.get("clat"), stats.get("lat"), 1.0  # fio 2.x reported clat in µs
    if isinstance(clat, dict) and (clat.get("N") == 0 or not any(_number(clat.get(k)) for k in ("min", "mean", "max"))):
        clat = None  # not measured (gtod_reduce=1, disable_clat): zeros that must not read as 0 µs
    if isinstance(clat, dict) and isinstance(lat, dict) and fio_flags.exceeds(
            _number(clat.get("mean")) / scale, _number(lat.get("mean")) / scale):
        suspect.append(f"{name} (clat {_number(clat.get('mean')) / scale:.6g} µs, lat "
                       f"{_number(lat.get('mean')) / scale:.6g} µs)")
        clat = None  # lat = slat + clat for every I/O: an engine's or fio's bug, not a latency
    if isinstance(clat, dict):
        for key, label in (("min", "min"), ("mean", "mean"), ("max", "max")):
            if key in clat:
                metrics.add(f"{name}_clat_{label}", _field(clat, key, name) / scale, "µs", False)
        _percentiles(clat, f"{name}_clat_", scale, metrics)
    if isinstance(lat, dict) and lat.get("N") != 0:  # `--lat_percentiles=1`: the total latency's
        _percentiles(lat, f"{name}_lat_", scale, metrics)
    return iops, bw


def _span(spans: dict[tuple[Any, str], list[float]], group: Any, direction: str, stats: Mapping[str, Any],
          bw: float) -> None:
    """Add a job direction's KiB (`io_kbytes`, fio 3: 2.x's `io_bytes` was in KiB) and runtime (ms) to its group's."""
    span = spans.setdefault((group, direction), [0.0, 0.0, 0.0])
    span[0] += _number(stats.get("io_kbytes"))
    span[1] = max(span[1], _number(stats.get("runtime")))
    span[2] += bw


def _staggered(spans: dict[tuple[Any, str], list[float]]) -> list[str]:
    """STAGGERED, as the text report's (fio_groups.staggered): fio's group figure is its bytes over its longest
    job's runtime (what `Run status group N` prints; startdelay makes the span longer still, never shorter); a
    sum of the jobs' rates over 3% above it means the jobs did not all run side by side."""
    flags = []
    for (group, direction), (kib, runtime_ms, total) in spans.items():
        fio = kib / (runtime_ms / 1000) if runtime_ms > 0 else 0.0
        if fio and total > fio * 1.03:
            flags.append(fio_flags.staggered_flag(f"fio's JSON gives group {group} {direction} bw={fio:.0f} KiB/s "
                                                  "(its KiB over its longest job's runtime)", total))
    return flags


def _percentiles(block: Mapping[str, Any], prefix: str, scale: float, metrics: MetricList) -> None:
    """A latency block's percentiles (`"percentile": {"99.000000": 5472, ...}`) as `<prefix>p99` (µs)."""
    pct = block.get("percentile")
    if isinstance(pct, dict):
        for key, value in pct.items():
            label = percentile_label(key)
            if label == "p0":  # fio 2.x pads its list with `"0.00" : 0` entries
                continue
            metrics.add(prefix + label, _number(value) / scale, "µs", False)


def _template_shape(requested: Mapping[str, Any] | None, echoed: Echoed, jobs: int, echoes: bool = True) -> list[str]:
    """PARAM_MISMATCH for a run (of the template, or imported with its params) that ran several jobs at once
    (`numjobs`, job sections: the template runs one, and the IOPS are their sum) or another `direct` than requested
    (fio's default, when the report echoes none, is 0: buffered, page-cache I/O)."""
    if requested is None:
        return []
    flags = []
    numjobs = echoed.get("numjobs", 1)
    if jobs > 1 or not isinstance(numjobs, int) or numjobs > 1:
        flags.append(fio_flags.jobs_flag(jobs if jobs > 1 else numjobs))
    if echoes and "direct" in requested and not same_value(requested["direct"], echoed.get("direct", 0)):
        flags.append(f"PARAM_MISMATCH: direct echoed as {echoed.get('direct', '0 (not set: buffered I/O)')}, "
                     f"requested {requested['direct']}")
    return flags


def _job_prefixes(jobs: list[dict[str, Any]]) -> list[str]:
    """Each job's metric prefix, from its name: a job of several with no `jobname` (fio prints it in every job) lost
    its line, and its figures would go under another name."""
    if len(jobs) > 1 and any("jobname" not in j for j in jobs):
        raise ParseFailure("unknown-format", "a fio JSON job has no `jobname`: that line is missing, so the "
                                             "report is damaged")
    raw = [_SLUG.sub("_", str(j.get("jobname", "job"))).strip("_").lower() or "job" for j in jobs]
    named = Counter(raw)
    return [f"{n}_{i}_" if named[n] > 1 else f"{n}_" for i, n in enumerate(raw)]


def _check_errors(jobs: list[dict[str, Any]], text: str = "") -> None:
    """A job's error fails the run, quoting fio's own words for it from its stderr in the log
    (`t: you need to specify size=`, `fio: pid=0, err=22/file:...`; JSON lines never start so)."""
    for job in jobs:
        err = job.get("error")
        if isinstance(err, int) and err:
            name = job.get("jobname", "?")
            if err in _DENIED_ERRNO:
                raise ParseFailure("permission-denied", f"fio job {name} failed with errno {err} "
                                                        "(permission denied): check the target path")
            said = [line.strip() for line in text.splitlines()
                    if line.startswith((f"{name}: ", "fio: ")) and "(g=" not in line]
            why = f": {' / '.join(said)[:500]}" if said else "; see fio's stderr"
            raise ParseFailure("fatal", f"fio job {name} failed with error {err}{why}")


def _echoed(doc: Mapping[str, Any], job: Mapping[str, Any]) -> Echoed:
    options: dict[str, Any] = {}
    for source in (doc.get("global options"), job.get("job options")):
        if isinstance(source, dict):
            options.update(source)
    echoed: Echoed = {}
    for key in _ECHO:
        value = options.get(key)
        if isinstance(value, str):
            number = parse_int(value)
            echoed[key] = value if number is None else number
    split = fio_blocks.job_bs(options)  # fio uses a bssplit (or bsrange) over bs
    if split is not None:
        echoed["bs"] = split
    return echoed


def primary_direction(rw: str) -> str:
    """The direction whose figures stand for a run of `rw`: write for writes, trim for trims, else read."""
    return "write" if rw in fio_flags.WRITES else "trim" if rw in _TRIMS else "read"


def primary_metric(rw: str, names: set[str] | MetricList) -> str:
    """The IOPS figure that stands for a run of `rw` among `names`: its direction's; for a mixed or
    unknown rw (`randrw --rwmixread=0`, a 2.x report that echoes no options) the first direction
    present; `mixed_iops` under unified_rw_reporting. The direction's name when none is present."""
    primary = f"{primary_direction(rw)}_iops"
    if primary in names:
        return primary
    if rw in _MIXED_RW or not rw:
        for direction in DIRECTIONS:
            if f"{direction}_iops" in names:
                return f"{direction}_iops"
    return "mixed_iops" if "mixed_iops" in names else primary


def _rate_options(doc: Mapping[str, Any], jobs: list[dict[str, Any]]) -> str:
    """The rate caps the jobs ran under (`rate_iops=350,150`), from the global and the jobs' options."""
    found = {f"{key}={value}" for job in jobs for key, value in _options(doc, job).items() if key in _RATE_KEYS}
    return ", ".join(sorted(found))


def _options(doc: Mapping[str, Any], job: Mapping[str, Any]) -> dict[str, Any]:
    """A job's options: the global ones, with its own over them."""
    return {**(doc.get("global options") or {}), **(job.get("job options") or {})}


def _verifies(doc: Mapping[str, Any], job: Mapping[str, Any], asked: str = "") -> bool:
    """A write-only job with `verify` set: its reads check what it wrote. Terse lines echo no options: there
    (`asked`, the template's rw) a job that wrote, asked for a write mode, reads only to verify."""
    if asked:
        return asked in fio_flags.WRITES and isinstance(job.get("write"), dict)
    options = _options(doc, job)
    if "verify" not in options:
        return False
    return (options.get("rw", options.get("readwrite")) in fio_flags.WRITES
            and options.get("verify") not in ("0", "none"))


def _require_primary(metrics: MetricList, requested: Mapping[str, Any] | None, echoed: Echoed) -> None:
    rw = str((requested or {}).get("rw") or echoed.get("rw") or "")
    if not rw:
        return
    primary = primary_metric(rw, metrics)  # the direction's `<direction>_iops` when none is present
    if primary not in metrics:
        raise ParseFailure("unknown-format", f"fio was asked for rw={rw} but reports no "
                                             f"{primary.removesuffix('_iops')} I/O")
