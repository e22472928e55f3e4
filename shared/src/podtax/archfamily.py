"""The kind of machine a tool executable's architecture runs on (podtax.benchwrap.elf_arch's names): builds of one
family (arm beside aarch64, i386 beside x86_64) can run on one machine, and so confound a ranking of nodes whose scores
come from both; builds of two families (an x86 server's x86_64 sysbench, a Raspberry Pi's aarch64 one) never share a
machine: each is its node's speed. Used by `podtax scores` and the scheduler's mixed-architecture rule."""

from __future__ import annotations

FAMILIES = {"i386": "x86", "x32": "x86", "x86_64": "x86", "arm": "arm", "aarch64": "arm", "ppc": "ppc",
            "ppc64": "ppc", "ppc64le": "ppc", "s390": "s390", "s390x": "s390", "mips": "mips", "mips64": "mips",
            "riscv32": "riscv", "riscv64": "riscv", "loongarch32": "loongarch", "loongarch64": "loongarch"}


def family(archs: str) -> str:
    """The family of a score's "+"-joined tool architectures (an unknown name, or several families, is its own)."""
    kinds = {FAMILIES.get(a, a) for a in archs.split("+")}
    return kinds.pop() if len(kinds) == 1 else archs


# What a kernel runs without an emulator, by its `uname -m` (or Kubernetes') name: its own executables and those of
# its 32-bit compat mode (an arm64 kernel runs armhf builds, on CPUs with AArch32 at EL0; x86_64 runs i386 and x32).
# Any other pair ran through binfmt_misc and qemu-user (an x86_64 sysbench on an arm64 Pi: 5-20x slow).
# armv8l and i686 may be a 32-bit process's personality on a 64-bit kernel, Kubernetes' arm and 386 a 32-bit
# kubelet on one (a 32-bit Raspberry Pi OS with its 64-bit kernel): their family's 64-bit builds may be native too.
# Names not listed say nothing.
_X86, _ARM = ("x86_64", "i386", "x32"), ("aarch64", "arm")
_KERNELS = {"x86_64": _X86, "amd64": _X86, "i386": _X86, "i486": _X86, "i586": _X86, "i686": _X86, "386": _X86,
            "aarch64": _ARM, "arm64": _ARM, "armv8l": _ARM, "arm": _ARM, "armv7l": ("arm",), "armv6l": ("arm",),
            "ppc64le": ("ppc64le",), "ppc64": ("ppc64", "ppc"), "s390x": ("s390x", "s390"),
            "riscv64": ("riscv64",), "loongarch64": ("loongarch64",)}


def emulated(tool_arch: str | None, machine: str | None) -> bool:
    """Whether a tool executable built for `tool_arch` (podtax.benchwrap.elf_arch's names) ran emulated on a kernel
    whose `uname -m` (or node's kubernetes.io/arch) is `machine`: False when either is unknown or the kernel is not one
    listed in _KERNELS."""
    runs = _KERNELS.get((machine or "").lower())
    return tool_arch is not None and runs is not None and tool_arch not in runs
