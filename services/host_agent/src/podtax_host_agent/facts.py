"""Host facts: kernel, OS, CPU model, hardware threads, architecture, tool versions."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

from podtax import events, templates


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    return cpu_model(text, platform.processor())


def cpu_model(cpuinfo: str, processor: str = "") -> str:
    """The CPU model named in /proc/cpuinfo's text: x86's `model name`, a Raspberry Pi's `Model`, `Hardware`, MIPS's
    `cpu model`; else (an arm64 server: Graviton, Ampere Altra, whose cpuinfo has none of these, the kernel's
    arch/arm64/kernel/cpuinfo.c printing only ids) its `CPU implementer` and `CPU part` ids, so that a Neoverse-N1
    node (0x41 0xd0c) and a Neoverse-V1 one (0x41 0xd40) differ; else `processor` (platform.processor(), empty on
    Linux), else "unknown"."""
    lines = cpuinfo.splitlines()
    for key in ("model name", "Model", "Hardware", "cpu model"):
        for line in lines:
            if line.startswith(key) and ":" in line:
                return line.split(":", 1)[1].strip()
    ids: dict[str, list[str]] = {"CPU implementer": [], "CPU part": []}
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() in ids and value.strip() not in ids[key.strip()]:
            ids[key.strip()].append(value.strip())
    if ids["CPU implementer"] and ids["CPU part"]:  # big.LITTLE: several parts, in the order the CPUs list them
        return (f"CPU implementer {', '.join(ids['CPU implementer'])}, "
                f"part{'s' if len(ids['CPU part']) > 1 else ''} {', '.join(ids['CPU part'])}")
    return processor or "unknown"


def tool_path() -> str:
    """Where tools are looked up, for their version and their runs alike: the agent's PATH without its relative
    entries (empty, `.`: a tool is never taken from a working directory), then /usr/sbin and /sbin (hdparm's
    home, missing from many users' PATH)."""
    dirs = [d for d in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if os.path.isabs(d)]
    return os.pathsep.join(dict.fromkeys([*dirs, "/usr/sbin", "/sbin"]))


def tool_version(version_argv: tuple[str, ...]) -> str | None:
    """First line of `<tool> --version`, or None when the tool is not installed."""
    if not version_argv:
        return None
    path = tool_path()
    exe = shutil.which(version_argv[0], path=path)
    if not exe:
        return None
    try:  # the agent's environment (NATS credentials) is not the tool's
        proc = subprocess.run([exe, *version_argv[1:]], capture_output=True, text=True, timeout=10, check=False,
                              env={"PATH": path, "LC_ALL": "C"}, cwd="/", stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout or proc.stderr).strip()
    return text.splitlines()[0].strip() if text else None


def tool_versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for t in templates.REGISTRY.values():
        if t.host_executable and t.tool not in out and (v := tool_version(t.version_argv)):
            out[t.tool] = v
    return out


def collect(node: str, cluster: str) -> events.HostFacts:
    return events.HostFacts(node=node, cluster=cluster, kernel=platform.release(), os=_os_name(),
                            cpu_model=_cpu_model(), hw_threads=os.cpu_count() or 1, arch=platform.machine(),
                            tool_versions=tool_versions())
