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
from podtax import benchwrap, events, provenance, templates
from podtax.natsserver import free_port
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


def test_a_fifo_named_as_the_tool_is_not_read(tmp_path: Path) -> None:
    """A FIFO where the tool should be: open() waited for a writer forever (in the root host agent's event loop);
    run in a subprocess with a timeout so a hang fails this test instead of hanging the suite."""
    fifo = tmp_path / "sysbench"
    os.mkfifo(fifo)
    code = "import sys; from podtax import benchwrap; print(benchwrap.elf_arch(sys.argv[1]))"
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("elf_arch blocked on a FIFO")
    assert (proc.returncode, proc.stdout.strip()) == (0, "None"), proc.stderr


def test_a_host_network_runs_tool_is_the_client_not_python() -> None:
    argv = templates.get("iperf3").build_argv({"server": "127.0.0.1", "duration": 1}, "/w")
    assert argv[0] == sys.executable and benchwrap.tool_of(argv) == "iperf3"
    assert benchwrap.tool_of(["sysbench", "cpu", "run"]) == "sysbench"


async def test_a_host_network_run_names_the_clients_architecture_not_pythons(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The host agent runs iperf3's host side as `python -m podtax.netpair ... -- iperf3 ...`: tool_arch is iperf3's.
    Here iperf3 is found first as a script that runs the real one, so it has no ELF header: no tool_arch (it was
    Python's)."""
    real = shutil.which("iperf3", path=facts.tool_path())
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "iperf3").write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    (bin_dir / "iperf3").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    run = events.RunSpec(run_id="r", campaign="c", node="n", env="host", test="iperf3",
                         params={"server": "127.0.0.1", "duration": 1, "port": free_port()}, timeout_s=30)
    out = await run_template(run, 1_000_000, tmp_path / "w", None)
    assert out.exit_code == 0, out.stderr[-500:]
    before = provenance.split(out.stderr)[1]["before"]
    assert "tool_arch" not in before, before
    assert benchwrap.elf_arch(sys.executable) is not None  # what it named before
