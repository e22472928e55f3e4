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
        return platform.processor() or "unknown"
    for key in ("model name", "Model", "Hardware", "cpu model"):
        for line in text.splitlines():
            if line.startswith(key) and ":" in line:
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


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
