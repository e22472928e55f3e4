"""The templates' validation against the REAL tools (tools/template_sweep.py found each case): a value
a template accepts runs and parses to a positive primary figure; a value it refuses is one the tool
itself refuses, fails on or cannot measure, and the parser names the tool's reason. Refused values
are rendered by the template's own argv builder, bypassing validation (model_construct)."""

from __future__ import annotations

import platform
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any, get_args

import pytest
from podtax import templates
from podtax.parsers import ParseFailure, parse_run


def _tool(test: str) -> templates.Template:
    template = templates.get(test)
    if shutil.which(template.tool) is None and shutil.which(f"/usr/sbin/{template.tool}") is None:
        pytest.skip(f"{template.tool} is not installed (apt-get install {template.tool})")
    return template


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(test: str, params: dict[str, Any], cwd: Path) -> tuple[bool, subprocess.CompletedProcess[str]]:
    """(accepted by validation, the real tool's run of the template's argv for these parameters)."""
    template = _tool(test)
    try:
        argv = template.build_argv(params, str(cwd))
        accepted = True
    except templates.TemplateError:
        fields = template.params.model_fields
        full = {k: f.default for k, f in fields.items()} | params
        argv, accepted = template.argv(template.params.model_construct(**full), str(cwd)), False  # type: ignore[misc]
    return accepted, subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=cwd)


def _parsed_ok(test: str, params: dict[str, Any], proc: subprocess.CompletedProcess[str], flag: str = "") -> None:
    """Parsed, a positive primary figure, and no flags but those starting with `flag`, when given."""
    template = templates.get(test)
    parsed = parse_run(test, proc.stdout, proc.stderr, proc.returncode, params)
    assert parsed.metric(template.primary_metric(template.validate(params))).value > 0
    assert [f for f in parsed.flags if not flag or not f.startswith(flag)] == [], parsed.flags


@pytest.mark.parametrize(("block", "total"), [("4", "1G"), ("8", "1G"), ("24", "1G"), ("512", "1G"), ("3K", "1G"),
                                              ("1K", "512"), ("64M", "4G")])
def test_real_sysbench_memory_block_sizes(block: str, total: str, tmp_path: Path) -> None:
    """sysbench takes a power-of-two block of at least 8 bytes (else `FATAL: Invalid value for
    memory-block-size`), and a block over the total size runs 0 operations (refused: no figure). Blocks under 1 KiB are
    echoed as `0KiB` (no mismatch); slow rates are printed padded, `64 (  180.43 per second)`. Totals of 1G and
    4G (with time=1) so that no run ends under 0.1 s (refused as thread start-up, test_golden)."""
    params = {"threads": 1, "block_size": block, "total_size": total, "time": 1}
    accepted, proc = _run("sysbench-memory", params, tmp_path)
    if accepted:
        _parsed_ok("sysbench-memory", params, proc)
        if block == "64M":
            values = parse_run("sysbench-memory", proc.stdout).values()
            assert "( " in proc.stdout and 0 < values["operations_per_second"] < 10_000  # the padded rate, read
        return
    if templates.size_bytes(block) > templates.size_bytes(total):  # 0 operations: no figure, and says why
        with pytest.raises(ParseFailure, match="did no work: 0 events .* the block size") as failure:
            parse_run("sysbench-memory", proc.stdout, proc.stderr, proc.returncode)
        assert failure.value.reason == "fatal"
        return
    with pytest.raises(ParseFailure, match="memory-block-size") as failure:
        parse_run("sysbench-memory", proc.stdout, proc.stderr, proc.returncode, params)
    assert failure.value.reason == "bad-argument"  # the user's parameters, refused after the banner


def test_real_sysbench_cpu_without_limits_is_refused(tmp_path: Path) -> None:
    """events=0 and time=0: sysbench would run for ever ("running an endless test")."""
    template = _tool("sysbench-cpu")
    params = {"max_prime": 100, "events": 0, "time": 0}
    with pytest.raises(templates.TemplateError, match="never end"):
        template.validate(params)
    argv = template.argv(template.params.model_construct(threads=1, **params), str(tmp_path))  # type: ignore[misc]
    with pytest.raises(subprocess.TimeoutExpired) as ran:
        subprocess.run(argv, capture_output=True, text=True, timeout=3, check=False, cwd=tmp_path)
    assert "endless" in str(ran.value.stderr or "") + str(ran.value.output or "")


@pytest.mark.parametrize("ops", [100_000_000, 100_000_001])
def test_real_stress_ng_cpu_ops_bound(ops: int, tmp_path: Path) -> None:
    """stress-ng takes --cpu-ops up to 100000000 ("Value ... is out of range for cpu-ops")."""
    params = {"threads": 1, "method": "int8", "ops": ops, "timeout": 1}
    accepted, proc = _run("stress-ng-cpu", params, tmp_path)
    if accepted:
        _parsed_ok("stress-ng-cpu", params, proc, "SHORT:")  # the timeout comes first
        return
    with pytest.raises(ParseFailure, match="out of range") as failure:
        parse_run("stress-ng-cpu", proc.stdout, proc.stderr, proc.returncode, params)
    assert failure.value.reason == "bad-argument"


def test_real_stress_ng_cpu_methods(tmp_path: Path) -> None:
    """The template accepts every method the installed stress-ng lists (`--cpu-method which`) and, on the
    pinned build (0.15.06, x86_64), no other; a name it refuses, stress-ng refuses too (bad-argument)."""
    template = _tool("stress-ng-cpu")
    which = subprocess.run(["stress-ng", "--cpu-method", "which"], capture_output=True, text=True, timeout=30,
                           check=False)
    listed = (which.stdout + which.stderr).split("must be one of:", 1)[1].split()
    methods = list(get_args(templates.StressNgCpuMethod))
    assert "all" in listed and set(listed) <= set(methods), sorted(set(listed) - set(methods))
    version = subprocess.run(["stress-ng", "--version"], capture_output=True, text=True, timeout=30, check=False)
    if "version 0.15.06 " in version.stdout and platform.machine() == "x86_64":
        assert listed == methods
    params = {"threads": 1, "method": "bogus", "timeout": 1}
    accepted, proc = _run("stress-ng-cpu", params, tmp_path)
    assert not accepted
    with pytest.raises(templates.TemplateError, match="method: .*'matrixprod'"):
        template.validate(params)
    with pytest.raises(ParseFailure, match="cpu-method must be one of") as failure:
        parse_run("stress-ng-cpu", proc.stdout, proc.stderr, proc.returncode, params)
    assert failure.value.reason == "bad-argument"


@pytest.mark.parametrize(("bs", "size", "direct"), [("8M", "4M", False), ("4K", "1K", False), ("1", "64K", True),
                                                    ("512", "64K", False), ("4M", "4M", False)])
def test_real_fio_block_size_bounds(bs: str, size: str, direct: bool, tmp_path: Path) -> None:
    """fio refuses a bs over the file size ("size too small, must not be less than minimum block size");
    below a sector O_DIRECT fails (EINVAL) and the buffered layout writes the file a byte at a time."""
    params = {"rw": "randread", "bs": bs, "size": size, "iodepth": 1, "direct": direct, "runtime": 1}
    accepted, proc = _run("fio", params, tmp_path)
    if accepted:
        _parsed_ok("fio", params, proc)  # time_based: at least 1 s, whatever the size (no ROUNDED_RUNTIME)
        return
    assert proc.returncode != 0
    with pytest.raises(ParseFailure):
        parse_run("fio", proc.stdout, proc.stderr, proc.returncode, params)


@pytest.mark.parametrize(("length", "server"), [(1, "127.0.0.1"), (16, "127.0.0.1"), (65507, "127.0.0.1"),
                                                (65536, "127.0.0.1"), (0, "::1")])
def test_real_iperf3_udp_lengths_and_ipv6_loopback(length: int, server: str, tmp_path: Path) -> None:
    """iperf3 sends UDP datagrams of 16..65507 bytes ("parameter error - block size invalid"); a `::1`
    server is started on `::1` (it was started on 127.0.0.1 and the client's connection refused)."""
    if server == "::1":
        try:
            with socket.socket(socket.AF_INET6) as s:
                s.bind(("::1", 0))
        except OSError:
            pytest.skip("no IPv6 loopback here")
    params = {"server": server, "port": _free_port(), "protocol": "udp", "duration": 1, "length": length,
              "bitrate": "100M"}
    accepted, proc = _run("iperf3", params, tmp_path)
    if accepted:
        _parsed_ok("iperf3", params, proc)
        return
    with pytest.raises(ParseFailure, match="block size invalid") as failure:
        parse_run("iperf3", proc.stdout, proc.stderr, proc.returncode, params)
    assert failure.value.reason == "bad-argument"


@pytest.mark.parametrize(("server", "rate", "reason"), [("localhost", 0, "bad-argument"), ("127.0.0.1", 1, "fatal"),
                                                        ("127.0.0.1", 10, None)])
def test_real_sockperf_address_and_rate(server: str, rate: int, reason: str | None, tmp_path: Path) -> None:
    """sockperf 3.7 takes an IPv4 address only ("'-i' Invalid address: localhost", exit status 0), and
    1 message in 1 s leaves no valid observation ("No valid observations found", exit status 0)."""
    params = {"server": server, "port": _free_port(), "protocol": "udp", "duration": 1, "rate": rate}
    accepted, proc = _run("sockperf", params, tmp_path)
    assert accepted == (reason is None)
    if accepted:  # 10 messages leave fewer than 10 timed: the tail percentiles are beyond them
        _parsed_ok("sockperf", params, proc, "FEW_OBSERVATIONS: ")
        return
    with pytest.raises(ParseFailure) as failure:
        parse_run("sockperf", proc.stdout, proc.stderr, proc.returncode, params)
    assert failure.value.reason == reason


def test_real_hdparm_on_an_empty_device_names_the_cause(tmp_path: Path) -> None:
    """`hdparm -T /dev/null` exits 0 with only "read() hit EOF - device too small": not a cut run."""
    _tool("hdparm")
    params = {"mode": "cached", "device": "/dev/null"}
    accepted, proc = _run("hdparm", params, tmp_path)
    if "device too small" not in proc.stdout + proc.stderr:
        pytest.skip(f"hdparm cannot open /dev/null here: {(proc.stdout + proc.stderr).strip()[:200]}")
    with pytest.raises(ParseFailure, match="device too small") as failure:
        parse_run("hdparm", proc.stdout, proc.stderr, proc.returncode, params)
    assert accepted and failure.value.reason == "fatal"
