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
