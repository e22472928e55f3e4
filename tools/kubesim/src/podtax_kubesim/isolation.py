"""What isolation exec-mode containers can get on this machine, and setting it up per container:
a cgroup (v1 cpu+memory controllers or v2) carrying the CPU/memory limits, and fresh
PID/mount/UTS/IPC namespaces through util-linux `unshare`. Probed once; never fatal."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from podtax_kubesim.util import quantity

NSEXEC = Path(__file__).with_name("nsexec.py")
CFS_PERIOD = 100_000


@dataclass
class Capabilities:
    cgroup: str = ""  # "v1" | "v2" | ""
    cgroup_reason: str = ""
    unshare: bool = False
    unshare_reason: str = ""
    cpu_base: Path | None = None  # where container cgroups are created
    memory_base: Path | None = None
    cpu_mount: Path | None = None  # where the controller is mounted (bind target inside the namespace)
    memory_mount: Path | None = None


def _own_paths() -> dict[str, str]:
    out = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            out[c] = path
    return out


def _mounts() -> dict[str, Path]:
    """controller -> mount point, '' for the unified (v2) hierarchy."""
    out: dict[str, Path] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype, _, opts = (right.split(" ") + ["", "", ""])[:3]
        point = Path(left.split(" ")[4])
        if fstype == "cgroup2":
            out.setdefault("", point)
        elif fstype == "cgroup":
            for opt in opts.split(","):
                if opt in ("cpu", "memory"):
                    out.setdefault(opt, point)
    return out


def _try_dir(base: Path) -> str:
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = base / "kubesim-probe"
        probe.mkdir(exist_ok=True)
        probe.rmdir()
        return ""
    except OSError as exc:
        return f"cannot create cgroups under {base}: {exc.strerror}"


@functools.cache
def probe() -> Capabilities:
    caps = Capabilities()
    if os.geteuid() != 0:
        caps.cgroup_reason = caps.unshare_reason = "not running as root"
        return caps
    try:
        mounts, own = _mounts(), _own_paths()
    except OSError as exc:
        caps.cgroup_reason = f"cannot read cgroup information: {exc}"
        mounts, own = {}, {}
    if "cpu" in mounts and (mounts["cpu"] / "cpu.cfs_quota_us").exists():
        caps.cpu_mount = mounts["cpu"]
        caps.cpu_base = mounts["cpu"] / own.get("cpu", "/").lstrip("/") / "podtax-kubesim"
        caps.cgroup_reason = _try_dir(caps.cpu_base)
        if not caps.cgroup_reason:
            caps.cgroup = "v1"
            if "memory" in mounts:
                base = mounts["memory"] / own.get("memory", "/").lstrip("/") / "podtax-kubesim"
                if not _try_dir(base):
                    caps.memory_base, caps.memory_mount = base, mounts["memory"]
    elif "" in mounts and (mounts[""] / "cgroup.controllers").exists():
        caps.cgroup_reason = _setup_v2(caps, mounts[""], own.get("", "/"))
    elif not caps.cgroup_reason:
        caps.cgroup_reason = "no cgroup v1 cpu controller or cgroup v2 hierarchy is mounted"
    if shutil.which("unshare") is None:
        caps.unshare_reason = "util-linux unshare is not installed"
    else:
        try:
            proc = subprocess.run(["unshare", "--pid", "--fork", "--mount", "--uts", "--ipc", "--mount-proc",
                                   "true"], capture_output=True, text=True, timeout=10, check=False)
            caps.unshare = proc.returncode == 0
            caps.unshare_reason = "" if caps.unshare else f"unshare failed: {proc.stderr.strip()[:200]}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            caps.unshare_reason = f"unshare failed: {exc}"
    return caps


def _setup_v2(caps: Capabilities, root: Path, own: str) -> str:
    parent = root / own.lstrip("/")
    base = parent / "podtax-kubesim"
    if "cpu" not in (parent / "cgroup.controllers").read_text().split():
        return f"the cpu controller is not available in {parent}"
    reason = _try_dir(base)
    if reason:
        return reason
    try:
        for cg in (parent, base):
            (cg / "cgroup.subtree_control").write_text("+cpu +memory")
    except OSError as exc:
        return f"cannot enable the cpu controller for {base}: {exc.strerror}"
    caps.cgroup, caps.cpu_base, caps.cpu_mount = "v2", base, root
    return ""


@dataclass
class Applied:
    """How one container is isolated: argv prefix, extra env, a description, and cleanup."""

    prefix: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""
    dirs: list[Path] = field(default_factory=list)

    def cleanup(self) -> None:
        for cg in self.dirs:
            with contextlib.suppress(OSError):
                for pid in (cg / "cgroup.procs").read_text().split():
                    os.kill(int(pid), signal.SIGKILL)
            with contextlib.suppress(OSError):
                cg.rmdir()


def apply(pod_uid: str, container: str, hostname: str, resources: dict, enabled: bool = True) -> Applied:
    caps = probe()
    if not enabled:
        return Applied(description="none: isolation disabled (isolation=False)")
    if not caps.cgroup and not caps.unshare:
        return Applied(description=f"none: {caps.cgroup_reason or caps.unshare_reason}")
    out = Applied(prefix=[sys.executable, "-I", str(NSEXEC)])
    parts: list[str] = []
    limits = resources.get("limits") or {}
    name = f"{pod_uid}-{container}"
    binds: list[str] = []
    if caps.cgroup and caps.cpu_base:
        cpu_dir = caps.cpu_base / name
        try:
            cpu_dir.mkdir(exist_ok=True)
            out.dirs.append(cpu_dir)
            _cpu_limit(caps.cgroup, cpu_dir, limits.get("cpu"))
            parts.append(f"cgroup-{caps.cgroup}-cpu")
            mem_dir = cpu_dir if caps.cgroup == "v2" else (caps.memory_base / name if caps.memory_base else None)
            if mem_dir is not None:
                mem_dir.mkdir(exist_ok=True)
                if mem_dir not in out.dirs:
                    out.dirs.append(mem_dir)
                _memory_limit(caps.cgroup, mem_dir, limits.get("memory"))
                parts.append(f"cgroup-{caps.cgroup}-memory")
            for cg in out.dirs:
                out.prefix += ["--procs", str(cg / "cgroup.procs")]
            if caps.unshare and caps.cpu_mount:
                binds.append(f"{cpu_dir}:{caps.cpu_mount}")
                if caps.cgroup == "v1" and caps.memory_mount and mem_dir is not None:
                    binds.append(f"{mem_dir}:{caps.memory_mount}")
                out.env["PODTAX_CGROUP_DIR"] = str(caps.cpu_mount)
            else:
                out.env["PODTAX_CGROUP_DIR"] = str(cpu_dir)
        except OSError as exc:
            out.cleanup()
            out.dirs, parts = [], [f"no-cgroup: {exc.strerror}"]
            out.prefix = out.prefix[:3]
            binds = []
    if caps.unshare:
        out.prefix.append("--unshare")
        for b in binds:
            out.prefix += ["--bind", b]
        out.prefix += ["--hostname", hostname[:63]]
        parts += ["unshare-pid", "unshare-mount", "unshare-uts", "unshare-ipc"]
    else:
        parts.append(f"no-namespaces: {caps.unshare_reason}")
    out.prefix.append("--")
    out.description = ",".join(parts)
    return out


def _cpu_limit(version: str, cg: Path, cpu: object) -> None:
    quota = int(quantity(cpu) * CFS_PERIOD) if cpu is not None else -1
    if version == "v1":
        (cg / "cpu.cfs_period_us").write_text(str(CFS_PERIOD))
        (cg / "cpu.cfs_quota_us").write_text(str(quota))
    else:
        (cg / "cpu.max").write_text(f"{'max' if quota < 0 else quota} {CFS_PERIOD}")


def _memory_limit(version: str, cg: Path, memory: object) -> None:
    if memory is None:
        return
    value = str(int(quantity(memory)))
    (cg / ("memory.limit_in_bytes" if version == "v1" else "memory.max")).write_text(value)
