"""podtax.cores: the cores a process may use, its affinity capped by a cgroup CPU quota (a container's cpu limit).
quota_cores is a pure function of the files' text; usable_cores reads real files laid out as /sys/fs/cgroup is,
written to tmp_path (the machine's own cgroup is whatever the test runs in)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from podtax.cores import quota_cores, usable_cores

AFFINITY = len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("cpu_max", "quota", "period", "want"),
    [
        ("200000 100000\n", None, None, 2),  # the analyzer pod's cpu: "2"
        ("150000 100000\n", None, None, 2),  # 1.5 cores: two processes can use them
        ("50000 100000\n", None, None, 1),
        ("800000 100000\n", None, None, 8),
        ("1000 1000\n", None, None, 1),
        ("max 100000\n", None, None, None),  # no limit
        ("max 100000\n", "200000\n", "100000\n", None),  # v2 says no limit: v1's files are not read
        ("", None, None, None),
        ("lots 100000\n", None, None, None),  # unreadable: no limit
        (None, "-1\n", "100000\n", None),  # v1 without a limit
        (None, "300000\n", "100000\n", 3),
        (None, "250000\n", "100000\n", 3),
        (None, "300000\n", None, None),
        (None, None, None, None),
    ],
)
def test_quota_cores(cpu_max, quota, period, want):
    assert quota_cores(cpu_max, quota, period) == want


@pytest.mark.parametrize(
    ("files", "limit"),
    [
        ({"cpu.max": "100000 100000\n"}, 1),  # cgroup v2
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),  # cgroup v1
        ({"cpu,cpuacct/cpu.cfs_quota_us": "100000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, 1),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({"cpu.max": "6400000 100000\n"}, 64),  # more than this machine's cores: the affinity decides
        ({}, None),  # no cgroup files at all
    ],
)
def test_usable_cores_reads_the_cgroup_files(tmp_path: Path, files: dict[str, str], limit: int | None):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert usable_cores(tmp_path) == (AFFINITY if limit is None else min(AFFINITY, limit))


def test_a_quota_of_one_core_keeps_the_comparison_serial(tmp_path: Path, monkeypatch):
    """cell_pool.workers() takes the quota into account: with a 1-core quota, one process (no pool), even on
    idle cores. The load average is a stand-in (labelled test double: this machine's load cannot be set), 0."""
    from podtax import cores
    from podtax_analyzer import cell_pool

    monkeypatch.setattr(cores, "CGROUP", tmp_path)
    monkeypatch.delenv(cell_pool.WORKERS_ENV, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert cell_pool.workers() == AFFINITY  # no quota: every core of the affinity
    (tmp_path / "cpu.max").write_text("100000 100000\n")
    assert cell_pool.workers() == 1


def test_an_unreadable_cgroup_is_no_limit(tmp_path: Path):
    """A cgroup path that cannot even be looked at is no limit, not an error. (The tests run as root here, so no
    permission can be denied; a name over NAME_MAX makes the stat fail the same way: an OSError that Path.exists
    does not swallow, as it does not swallow PermissionError.)"""
    root = tmp_path / ("x" * 300)
    assert usable_cores(root) == AFFINITY


@pytest.mark.parametrize(
    ("affinity", "cpu_max", "load", "want"),
    [
        (64, "200000 100000\n", 0.0, 2),  # the analyzer pod's cpu: "2" on an idle 64-core node
        (64, "200000 100000\n", 3.0, 2),  # the node's load is the node's: 63 idle cores, the quota's 2 usable
        (64, "200000 100000\n", 10.0, 2),
        (64, "200000 100000\n", 65.5, 1),  # every core of the node busy: none idle, one process
        (64, None, 30.0, 36),  # no quota: 64 - (30 - 2)
        (4, "200000 100000\n", 3.6, 2),  # 4 - 1.6 = 2.4 idle: the quota's 2
        (4, "200000 100000\n", 5.0, 1),  # 4 - 3 = 1 idle
        (2, None, 3.0, 1),  # this machine's measured case: the pool stops paying at a load of about 3
        (2, None, 0.0, 2),
        (2, "100000 100000\n", 0.0, 1),
    ],
)
def test_workers_are_the_idle_cores_at_most_the_quota(tmp_path: Path, monkeypatch, affinity, cpu_max, load, want):
    """cell_pool.workers(): the node's idle cores (affinity less the node's load average less two), at most the
    quota. The affinity and the load average are stand-ins (labelled test doubles: this machine's cannot be set);
    the cgroup file is real, in tmp_path."""
    from podtax import cores
    from podtax_analyzer import cell_pool

    monkeypatch.setattr(cores, "CGROUP", tmp_path)
    monkeypatch.delenv(cell_pool.WORKERS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(affinity)))
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    if cpu_max is not None:
        (tmp_path / "cpu.max").write_text(cpu_max)
    assert cell_pool.workers() == want
