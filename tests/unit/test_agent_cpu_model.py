"""The host facts' CPU model from /proc/cpuinfo. An arm64 server's cpuinfo (Graviton, Ampere Altra) has no `model
name`, `Model` nor `Hardware` line: the kernel's arch/arm64/kernel/cpuinfo.c c_show prints per CPU `processor`,
`BogoMIPS`, `Features`, `CPU implementer\\t: 0x%02x`, `CPU architecture: 8`, `CPU variant\\t: 0x%x`, `CPU part\\t:
0x%03x`, `CPU revision\\t: %d` (a `model name` only for a 32-bit task). platform.processor() is empty on Linux, so
every such node was `unknown`, a Neoverse-N1 node (Graviton2) and a Neoverse-V1 one (Graviton3) alike. The texts
below are written in c_show's format (labelled stand-ins: no arm64 machine here) with the ids lscpu names; the x86
text is this machine's own /proc/cpuinfo."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax_host_agent import facts


def _arm64(*parts: tuple[str, str]) -> str:
    """/proc/cpuinfo as arm64's c_show prints it, one block per (variant, part)."""
    return "".join(f"processor\t: {i}\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 "
                   f"atomics\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: {variant}\nCPU part\t: "
                   f"{part}\nCPU revision\t: 1\n\n" for i, (variant, part) in enumerate(parts))


GRAVITON2 = _arm64(*[("0x3", "0xd0c")] * 4)  # Neoverse-N1
GRAVITON3 = _arm64(*[("0x1", "0xd40")] * 4)  # Neoverse-V1
BIG_LITTLE = _arm64(*[("0x1", "0xd05")] * 4, *[("0x1", "0xd41")] * 3, ("0x1", "0xd44"))  # A55, A78, X1
PI4_AARCH64 = _arm64(*[("0x0", "0xd08")] * 4) + ("Hardware\t: BCM2835\nRevision\t: c03114\nSerial\t\t: "
                                                 "100000000000000a\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n")
COMPAT_32 = "processor\t: 0\nmodel name\t: ARMv8 Processor rev 3 (v8l)\nBogoMIPS\t: 108.00\n"  # armv7l userland


@pytest.mark.parametrize(("text", "model"), [
    (GRAVITON2, "CPU implementer 0x41, part 0xd0c"),
    (GRAVITON3, "CPU implementer 0x41, part 0xd40"),
    (BIG_LITTLE, "CPU implementer 0x41, parts 0xd05, 0xd41, 0xd44"),
    (PI4_AARCH64, "Raspberry Pi 4 Model B Rev 1.4"),
    (COMPAT_32, "ARMv8 Processor rev 3 (v8l)"),
    ("", "unknown"),
])
def test_the_cpu_model_of_a_cpuinfo(text: str, model: str) -> None:
    assert facts.cpu_model(text) == model


def test_two_arm64_servers_are_told_apart_and_x86_is_its_model_name() -> None:
    assert facts.cpu_model(GRAVITON2) != facts.cpu_model(GRAVITON3)
    own = Path("/proc/cpuinfo").read_text()
    names = [line.split(":", 1)[1].strip() for line in own.splitlines() if line.startswith("model name")]
    if names:  # x86 (this machine): its model name
        assert facts.cpu_model(own) == names[0]
    else:  # an arm64 machine: its ids or its board's Model, never unknown
        assert facts.cpu_model(own) != "unknown"
    assert facts.cpu_model("", "aarch64") == "aarch64"
