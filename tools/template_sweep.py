"""Sweep every registered host template over boundary and representative parameter values on the REAL
tools installed here, the way the host agent runs them, and print one line per combination.

    python tools/template_sweep.py [--only fio,iperf3] [--timeout 30] [--slack 5]

Each combination is validated by the template; an accepted one is run by the host agent's own
`run_template` (the template's argv builder, the provenance block around the output) in a scratch
work directory, and its output is read by `podtax.parsers.parse_run` with `requested=params`, as the
parser service does. Outcomes:

- ``refused``     the template's validation refused the parameters (fine: the user is told why)
- ``ok``          parsed, with a finite, positive primary metric
- ``tool-rejects`` accepted by the template, but the tool refused its command line (bad-argument, fatal)
- ``parse-fail``  accepted, the tool ran, but its output did not parse (the reason is printed)
- ``bad-primary`` parsed, but the primary metric is missing, zero, negative or not finite
- ``too-long``    the run took far longer than its duration parameter implies (or was killed)
- ``env``         this machine cannot run it (no device permission, server could not start, tool missing)

A combination the host agent itself refuses (execute.target_problem: a network server other than 127.0.0.1
or ::1) is ``refused`` too, unrun. sockperf's ::1 is ``tool-rejects`` with sockperf 3.7 (Debian 12's, the
bench image's): IPv6 needs sockperf >= 3.8 (template_params.Sockperf says so).

Parameters vary one at a time around a fast baseline (enums also crossed where they interact), so a
run is about a second (sockperf's warm-up adds ~3 s); the whole sweep takes about seven minutes.
stress-ng-cpu's methods are those the installed stress-ng lists (the template accepts those of the pinned
stress-ng, templates.StressNgCpuMethod: a method of another version or architecture that it does not
know is `refused`, one it knows that this stress-ng lacks is the tool's bad-argument).
Exit status 1 when any combination lands in tool-rejects, parse-fail, bad-primary or too-long.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from podtax import events, templates
from podtax.oneline_args import OneLineParser
from podtax.parsers import ParseFailure, parse_run
from podtax_host_agent.execute import run_template, target_problem

BAD = ("tool-rejects", "parse-fail", "bad-primary", "too-long")
_TOOL_REASONS = ("bad-argument", "fatal", "nonzero-exit")
_ENV_REASONS = ("permission-denied", "refused", "unreachable", "server-busy")
_DURATION = {"sysbench-cpu": "time", "sysbench-memory": "time", "stress-ng-cpu": "timeout", "fio": "runtime",
             "iperf3": "duration", "sockperf": "duration"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _vary(base: dict[str, Any], axes: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    """The baseline, then each parameter through its values with the others at the baseline."""
    yield dict(base)
    for name, values in axes.items():
        for value in values:
            if value != base.get(name):
                yield {**base, name: value}


def _cross(base: dict[str, Any], **axes: list[Any]) -> Iterator[dict[str, Any]]:
    combos: list[dict[str, Any]] = [dict(base)]
    for name, values in axes.items():
        combos = [{**c, name: v} for c in combos for v in values]
    yield from combos


def _stress_ng_methods() -> list[str]:
    if shutil.which("stress-ng") is None:
        return ["all"]
    proc = subprocess.run(["stress-ng", "--cpu-method", "which"], capture_output=True, text=True, check=False)
    text = proc.stdout + proc.stderr
    return text.split(":", 1)[1].split() if ":" in text else ["all"]


def _root_device() -> str:
    """The block device holding `/` (hdparm's device here), by its major:minor in /sys."""
    dev = os.stat("/").st_dev
    return "/dev/" + Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve().name


def combinations() -> Iterator[tuple[str, dict[str, Any]]]:
    cpu = {"threads": 1, "max_prime": 2000, "events": 0, "time": 1}
    for p in _vary(cpu, {"threads": [2, 64, 1024], "max_prime": [3, 10000, 1_000_000, 10_000_000],
                         "events": [1, 1_000_000_000]}):
        yield "sysbench-cpu", p
    yield "sysbench-cpu", {**cpu, "events": 100, "time": 0}
    yield "sysbench-cpu", {**cpu, "events": 100, "time": 86400}
    yield "sysbench-cpu", {**cpu, "events": 0, "time": 0}  # neither limit: endless
    # 4G: a memory run under 0.01 s is refused (thread start-up); 0.1 s or more is advised
    mem = {"threads": 1, "operation": "write", "block_size": "1K", "total_size": "4G", "time": 1}
    for p in _vary(mem, {"threads": [2, 64, 1024], "block_size": ["1", "4", "8", "24", "3K", "1M", "64M", "1G"],
                         "total_size": ["1", "1K", "100G", "9999999T"], "time": [0]}):
        yield "sysbench-memory", p
    for p in _cross(mem, operation=["read", "write", "none"], block_size=["8", "1K", "1M"]):
        yield "sysbench-memory", p
    sng = {"threads": 1, "method": "all", "ops": 0, "timeout": 1}
    for p in _vary(sng, {"threads": [2, 64, 1024], "method": _stress_ng_methods(),
                         "ops": [1, 1_000_000_000]}):
        yield "stress-ng-cpu", p
    yield "stress-ng-cpu", {**sng, "ops": 1000, "timeout": 86400}
    for p in _cross({}, mode=["cached", "disk"], device=[_root_device()]):
        yield "hdparm", p
    fio = {"rw": "randread", "bs": "4K", "size": "4M", "iodepth": 1, "direct": False, "runtime": 1}
    for p in _cross(fio, rw=["read", "write", "randread", "randwrite", "rw", "randrw"], direct=[False, True],
                    iodepth=[1, 16]):
        yield "fio", p
    for p in _vary(fio, {"bs": ["1", "512", "1K", "1M", "4M", "8M", "1G"], "size": ["1", "1K", "4K", "64M"],
                         "iodepth": [2, 1024], "runtime": [3600]}):
        yield "fio", p
    for p in _cross(fio, direct=[True], bs=["1", "1K", "3K"]):
        yield "fio", p
    net = {"server": "127.0.0.1", "protocol": "tcp", "duration": 1}
    ip = {**net, "parallel": 1, "reverse": False, "length": 0, "bitrate": "0"}
    for p in _cross(ip, protocol=["tcp", "udp"], reverse=[False, True]):
        yield "iperf3", p
    for proto in ("tcp", "udp"):
        for p in _vary({**ip, "protocol": proto}, {
                "server": ["::1"], "parallel": [2, 128], "duration": [2],
                "length": [1, 16, 1000, 65507, 65536, 1_048_576], "bitrate": ["1", "1K", "1M", "9999999G"]}):
            yield "iperf3", p
    sp = {**net, "msg_size": 64, "rate": 0}
    for proto in ("tcp", "udp"):
        for p in _vary({**sp, "protocol": proto}, {"server": ["::1"], "msg_size": [14, 1472, 65000],
                                                    "duration": [2], "rate": [1, 10, 10_000_000]}):
            yield "sockperf", p


def _version(template: templates.Template) -> str | None:
    proc = subprocess.run(list(template.version_argv), capture_output=True, text=True, timeout=30, check=False)
    return (proc.stdout or proc.stderr).strip() or None


def judge(test: str, params: dict[str, Any], workdir: Path, timeout_s: float, slack_s: float,
          version: str | None) -> tuple[str, float, str]:
    """(outcome, seconds, detail) of one combination."""
    template = templates.get(test)
    if "port" in template.params.model_fields:
        params = {**params, "port": _free_port()}
    try:
        template.build_argv(params, str(workdir))
    except templates.TemplateError as exc:
        return "refused", 0.0, exc.detail
    run = events.RunSpec(run_id="sweep", campaign="sweep", node="local", env="host", test=test, params=params,
                         timeout_s=timeout_s)
    if problem := target_problem(run):  # the host agent refuses it before it runs anything
        return "refused", 0.0, problem
    started = time.monotonic()
    out = asyncio.run(run_template(run, 1 << 20, workdir, version))
    took = time.monotonic() - started
    duration = params.get(_DURATION.get(test, ""), 0) or 0
    if out.timed_out or (duration and took > duration * 3 + slack_s):
        return "too-long", took, f"killed after {timeout_s:g} s" if out.timed_out else f"{duration} s asked"
    try:
        parsed = parse_run(test, out.stdout, out.stderr, out.exit_code, params, version)
    except ParseFailure as exc:
        tail = (out.stdout + out.stderr).strip().splitlines()
        tool_said = next((ln for ln in reversed(tail) if not ln.startswith("#podtax")), "")
        kind = ("env" if exc.reason in _ENV_REASONS else
                "tool-rejects" if exc.reason in _TOOL_REASONS else "parse-fail")
        return kind, took, f"{exc.reason}: {exc.detail[:160]} | tool: {tool_said[:160]}"
    primary = template.primary_metric(template.validate(params))
    value = next((m.value for m in parsed.metrics if m.name == primary), None)
    if value is None or not math.isfinite(value) or value <= 0:
        return "bad-primary", took, f"{primary}={value}"
    return "ok", took, f"{primary}={value:g}" + (f" flags={list(parsed.flags)}" if parsed.flags else "")


def _seconds(above: float | None) -> Any:
    """argparse's `type=` for a number of seconds: finite, and > `above` (>= 0 when `above` is None)."""

    def parse(value: str) -> float:
        try:
            seconds = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
        low_ok = seconds >= 0 if above is None else seconds > above
        if not (math.isfinite(seconds) and low_ok):
            raise argparse.ArgumentTypeError(f"{value!r}: give a finite number of seconds, "
                                             + ("0 or more" if above is None else f"more than {above:g}"))
        return seconds

    return parse


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated template names (default: all host templates)")
    ap.add_argument("--timeout", type=_seconds(0.0), default=30.0, help="seconds before a run is killed")
    ap.add_argument("--slack", type=_seconds(None), default=5.0, help="seconds over 3x the duration parameter allowed")
    args = ap.parse_args(argv)
    only = {t for t in args.only.split(",") if t}
    known = sorted({test for test, _ in combinations()})
    if only - set(known):
        ap.error(f"--only: unknown template {', '.join(sorted(only - set(known)))}; use some of: {', '.join(known)}")
    tally: Counter[str] = Counter()
    versions: dict[str, str | None] = {}
    with tempfile.TemporaryDirectory(prefix="podtax-sweep-") as tmp:
        for test, params in combinations():
            template = templates.get(test)
            if only and test not in only:
                continue
            if shutil.which(template.tool) is None and shutil.which(f"/usr/sbin/{template.tool}") is None:
                outcome, took, detail = "env", 0.0, f"{template.tool} is not installed"
            else:
                if template.tool not in versions:
                    versions[template.tool] = _version(template)
                outcome, took, detail = judge(test, params, Path(tmp), args.timeout, args.slack,
                                              versions[template.tool])
            tally[outcome] += 1
            shown = templates.params_key({k: v for k, v in params.items() if k != "port"})
            print(f"{outcome:<12} {took:6.1f}s  {test:<15} {shown}  -> {detail}", flush=True)
    print(f"\n{sum(tally.values())} combinations: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
    return 1 if any(tally[k] for k in BAD) else 0


if __name__ == "__main__":
    os.environ.setdefault("LC_ALL", "C")
    sys.exit(main())
