#!/usr/bin/env python3
"""podtax-bench: run one benchmark argv and print the provenance block before and after it.

Stdlib only, one file: the benchmark image copies it to /usr/local/bin/podtax-bench, and on a
plain host it is the `podtax-bench` console script (the emulator's exec mode runs a pod's
command line as it is). Usage: ``podtax-bench TOOL [ARGS...]`` — no shell is involved.

Block format (one line each on stderr, see podtax.provenance):

    #podtax phase=before tool_version='sysbench 1.0.20' cpu_limit=1.000 nr_throttled=0 ...
    #podtax phase=after nr_throttled=12 throttled_usec=48211
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

PREFIX = "#podtax "
VERSION_FLAGS = {"hdparm": "-V"}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cgroup_cpu(root: Path = Path("/sys/fs/cgroup")) -> dict[str, str]:
    """CPU limit (cores) and throttling counters of the current cgroup (v2, else v1).

    PODTAX_CGROUP_DIR, when set, names the cgroup's cpu directory to read instead (v1 or v2 files);
    the kubesim emulator's exec mode sets it."""
    out: dict[str, str] = {}
    override = os.environ.get("PODTAX_CGROUP_DIR")
    if override:
        cpu_dir = Path(override)
        stat_text, max_text = _read(cpu_dir / "cpu.stat"), _read(cpu_dir / "cpu.max")
    else:
        cpu_dir = root / "cpu"
        stat_text, max_text = _read(root / "cpu.stat"), _read(root / "cpu.max")
        if stat_text is None:  # cgroup v1
            stat_text = _read(cpu_dir / "cpu.stat") or _read(root / "cpu,cpuacct" / "cpu.stat")
    if max_text is None:  # cgroup v1
        quota, period = _read(cpu_dir / "cpu.cfs_quota_us"), _read(cpu_dir / "cpu.cfs_period_us")
        if quota and period and quota != "-1":
            max_text = f"{quota} {period}"
    if max_text:
        quota, _, period = max_text.partition(" ")
        if quota != "max" and period:
            out["cpu_limit"] = f"{int(quota) / int(period):.3f}"
    for line in (stat_text or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "nr_throttled":
            out["nr_throttled"] = value
        elif key == "throttled_usec":
            out["throttled_usec"] = value
        elif key == "throttled_time":  # v1 reports nanoseconds
            out["throttled_usec"] = str(int(value) // 1000)
    return out


def tool_version(tool: str) -> str | None:
    try:
        proc = subprocess.run([tool, VERSION_FLAGS.get(Path(tool).name, "--version")],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout or proc.stderr).strip()
    return text.splitlines()[0] if text else None


def render(phase: str, fields: dict[str, str]) -> str:
    return PREFIX + " ".join([f"phase={phase}"] + [f"{k}={shlex.quote(v)}" for k, v in fields.items()])


def block(phase: str, version: str | None = None) -> str:
    fields: dict[str, str] = {}
    if phase == "before":
        if version:
            fields["tool_version"] = version
        fields["kernel"] = os.uname().release
        fields["hw_threads"] = str(os.cpu_count() or 1)
    fields.update(cgroup_cpu())
    return render(phase, fields)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    print(block("before", tool_version(args[0])), file=sys.stderr, flush=True)
    try:
        code = subprocess.run(args, check=False).returncode
    except OSError as exc:
        print(f"podtax-bench: cannot run {args[0]}: {exc}", file=sys.stderr)
        code = 127
    print(block("after"), file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
