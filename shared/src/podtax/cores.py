"""Cores this process may keep busy: its CPU affinity, capped by a cgroup CPU quota.

A container's ``cpu`` limit (the analyzer pod's ``cpu: "2"``) is a quota of CPU time per period, not an affinity:
``os.sched_getaffinity`` still lists every core of the node, so a pool sized by it alone would start one process
per host core, each throttled, each holding its memory. The quota is read from the process's own cgroup as a
container sees it (cgroup v2 ``cpu.max``, else v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``); a quota set only
on a parent cgroup that the container cannot see is not.
"""

from __future__ import annotations

import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def quota_cores(cpu_max: str | None, cfs_quota_us: str | None = None, cfs_period_us: str | None = None) -> int | None:
    """ceil(quota / period) from the text of cgroup v2's cpu.max ('200000 100000'; 'max 100000' = no limit) or,
    without it, of v1's cpu.cfs_quota_us (-1 = no limit) and cpu.cfs_period_us; None without a (readable) limit."""
    if cpu_max is not None:
        parts = cpu_max.split()
        if not parts or parts[0] == "max":
            return None
        return _ceil(parts[0], parts[1] if len(parts) > 1 else "100000")
    if cfs_quota_us is None or cfs_period_us is None:
        return None
    return _ceil(cfs_quota_us.strip(), cfs_period_us.strip())


def _ceil(quota: str, period: str) -> int | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    if q <= 0 or p <= 0:
        return None
    return -(-q // p)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def affinity_cores() -> int:
    """The cores in this process's CPU affinity (every core of the node in a container without a cpuset)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cgroup_limit(cgroup: Path | None = None) -> int | None:
    """ceil(quota / period) of this process's cgroup CPU quota; None without one, or where its files cannot be
    read (a missing, unreadable or unlistable file is no limit, never an error)."""
    root = CGROUP if cgroup is None else cgroup
    dirs = (root / "cpu", root / "cpu,cpuacct")
    quota, v1 = next(((q, d) for d in dirs if (q := _read(d / "cpu.cfs_quota_us")) is not None), (None, dirs[0]))
    return quota_cores(_read(root / "cpu.max"), quota, _read(v1 / "cpu.cfs_period_us"))


def usable_cores(cgroup: Path | None = None) -> int:
    """The cores in this process's affinity, at most ceil(quota / period) of its cgroup's CPU quota."""
    cores = affinity_cores()
    limit = cgroup_limit(cgroup)
    return cores if limit is None else max(1, min(cores, limit))
