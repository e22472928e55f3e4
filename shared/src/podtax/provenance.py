"""The provenance block printed around every benchmark, by the host agent and the pod wrapper alike.

Before and after the tool, one line each on stderr:

    #podtax phase=before tool_version="sysbench 1.0.20" cpu_limit=1.5 nr_throttled=0 throttled_usec=0
    #podtax phase=after nr_throttled=12 throttled_usec=48211

Values are `key=value` tokens; a value with spaces is double-quoted. `cpu_limit` is in cores
(`max` or absent = unlimited). Parsers never see these lines: :func:`split` removes them first.
"""

from __future__ import annotations

import shlex

from podtax.benchwrap import PREFIX
from podtax.events import Provenance


def split(text: str) -> tuple[str, dict[str, dict[str, str]]]:
    """Remove `#podtax` lines from text; return the rest and {phase: fields}."""
    if PREFIX not in text:
        return text, {}
    kept: list[str] = []
    phases: dict[str, dict[str, str]] = {}
    for line in text.splitlines(keepends=True):
        if line.startswith(PREFIX):
            try:
                tokens = shlex.split(line[len(PREFIX):])
            except ValueError:
                continue
            fields = dict(t.partition("=")[::2] for t in tokens if "=" in t)
            phases[fields.pop("phase", "unknown")] = fields
        else:
            kept.append(line)
    return "".join(kept), phases


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def to_model(phases: dict[str, dict[str, str]], **extra: object) -> Provenance:
    before, after = phases.get("before", {}), phases.get("after", {})
    limit = before.get("cpu_limit")
    return Provenance(
        kernel=before.get("kernel"),
        hw_threads=_int(before.get("hw_threads")),
        machine=before.get("machine") or None,
        tool_arch=before.get("tool_arch") or None,
        cpu_limit=float(limit) if limit not in (None, "", "max") else None,
        nr_throttled_before=_int(before.get("nr_throttled")),
        nr_throttled_after=_int(after.get("nr_throttled")),
        throttled_usec_before=_int(before.get("throttled_usec")),
        throttled_usec_after=_int(after.get("throttled_usec")),
        **extra,  # type: ignore[arg-type]
    )


# `uname -m` -> the architecture of the executables the kernel runs natively (benchwrap.elf_arch's names). armv8l is
# a 64-bit ARM kernel's name for a 32-bit task under its compat personality (a 32-bit ARM kernel says armv7l or
# older even on an ARMv8 CPU); i686 and the like are x86's 32-bit kernels.
_NATIVE = {"aarch64": "aarch64", "arm64": "aarch64", "armv8l": "aarch64", "x86_64": "x86_64", "amd64": "x86_64",
           "i386": "i386", "i486": "i386", "i586": "i386", "i686": "i386", "riscv64": "riscv64", "ppc64le": "ppc64le",
           "ppc64": "ppc64", "s390x": "s390x", "mips64": "mips64", "mips": "mips", "loongarch64": "loongarch64"}


def foreign_executable(prov: Provenance) -> str | None:
    """Words for a tool whose executable is not of its kernel's own architecture (a 32-bit arm build on an aarch64
    kernel: an armv7 image in a pod on an arm64 node, or a 32-bit Raspberry Pi OS under its 64-bit kernel), else
    None (either one unknown, or the same). The same version of a tool is then other code (sysbench's cpu test's
    64-bit `%` is a library call on 32-bit ARM; its memory test moves 32-bit words), so derive adds these words to
    the run's tool build, which the analyzer compares between the two sides of a cell (CONFOUNDED when they differ)."""
    machine, arch = prov.machine, prov.tool_arch
    if not machine or not arch:
        return None
    native = _NATIVE.get(machine) or ("arm" if machine.startswith("arm") else None)
    if native is None or native == arch:
        return None
    return f"{arch} executable, {machine} kernel"
