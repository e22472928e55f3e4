"""What a run knows of the code it ran: `uname -m` (the kernel's architecture: aarch64 in a 32-bit container on a
64-bit kernel) and the architecture its tool's executable was built for (its ELF header), printed in the provenance
block by the pod wrapper and the host agent alike (the analyzer's CONFOUNDED compares the sides' tool_arch where both
know it: tests/analysis/test_tool_arch_confounded.py). The ARM headers are the first bytes of Debian 12's sysbench
1.0.20+ds-5 executables (armhf: sha256 eceac09e..., arm64: sha256 163d8f6a..., from their .deb files); no ARM
machine here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from podtax import benchwrap, events, provenance
from podtax_host_agent import facts
from podtax_host_agent.execute import run_template

ARMHF = bytes.fromhex("7f454c4601010100000000000000000003002800010000009d65000034000000788b020000040005340020000a00"
                      "28001d001c00")
ARM64 = bytes.fromhex("7f454c460201010000000000000000000300b70001000000009a00000000000040000000000000"
                      "00f06403000000000000000000400038000a0040001c001b00")


@pytest.mark.parametrize(("head", "arch"), [(ARMHF, "arm"), (ARM64, "aarch64"), (b"#!/bin/sh\nexec sysbench\n", None),
                                            (ARMHF[:19], None)], ids=["armhf", "arm64", "script", "cut-short"])
def test_the_executables_architecture_from_its_elf_header(tmp_path: Path, head: bytes, arch: str | None) -> None:
    tool = tmp_path / "sysbench"
    tool.write_bytes(head)
    assert benchwrap.elf_arch(str(tool)) == arch
    line = benchwrap.block("before", "sysbench 1.0.20", str(tool))
    assert (f"tool_arch={arch}" in line) == (arch is not None) and f"machine={os.uname().machine}" in line
    assert benchwrap.elf_arch(str(tmp_path / "missing")) is None and benchwrap.elf_arch(None) is None


def test_the_pod_wrapper_names_its_tools_architecture() -> None:
    argv = [sys.executable, "-m", "podtax.benchwrap", "sysbench", "cpu", "--cpu-max-prime=2000", "--events=50",
            "--time=0", "run"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    before = provenance.split(proc.stderr)[1]["before"]
    assert before["machine"] == os.uname().machine
    assert before["tool_arch"] == benchwrap.elf_arch(shutil.which("sysbench")) is not None
    prov = provenance.to_model(provenance.split(proc.stderr)[1])
    assert (prov.machine, prov.tool_arch) == (before["machine"], before["tool_arch"])


async def test_the_host_agent_names_its_tools_architecture(tmp_path: Path) -> None:
    run = events.RunSpec(run_id="r", campaign="c", node="n", env="host", test="sysbench-cpu",
                         params={"threads": 1, "max_prime": 2000, "events": 50, "time": 5}, timeout_s=30)
    out = await run_template(run, 100_000, tmp_path, facts.tool_version(("sysbench", "--version")))
    before = provenance.split(out.stderr)[1]["before"]
    assert before["machine"] == os.uname().machine
    assert before["tool_arch"] == benchwrap.elf_arch(shutil.which("sysbench", path=facts.tool_path())) is not None

