"""The parsers against the installed tools themselves, with small parameters: each tool's figures in its
two forms from ONE run (stress-ng's table and its --yaml report, fio's normal text and its JSON) must
agree within the text's rounding, and sysbench's figures must be the ones its log prints. A figure the
parser reads wrong, or a good log it refuses, fails here on whatever versions the machine has."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_text


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed (apt-get install {argv[0]})")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, cwd=cwd)
    assert proc.returncode == 0, (argv, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc


STRESS_NG = [
    ["--cpu", "1", "--cpu-ops", "300", "--metrics-brief"],
    ["--cpu", "2", "--cpu-method", "int64", "--cpu-ops", "200", "--metrics", "--times"],
    ["--cpu", "1", "--cpu-ops", "300", "--metrics-brief", "--perf", "--tz"],  # sections after `metrics:`
    ["--matrix", "1", "--matrix-ops", "100", "--hash", "1", "--hash-ops", "100", "--metrics"],  # misc metrics
    ["--matrix", "1", "--matrix-ops", "100", "--metrics-brief", "--sn"],  # scientific notation
    ["--cpu", "1", "--cpu-ops", "300", "--metrics-brief", "--log-brief"],
]


@pytest.mark.parametrize("options", STRESS_NG, ids=lambda o: " ".join(o))
def test_stress_ng_table_and_yaml_of_one_run_agree(options: list[str], tmp_path: Path) -> None:
    proc = _run(["stress-ng", *options, "--yaml", "report.yaml"], tmp_path)
    table = parse_text(proc.stdout + proc.stderr)
    yaml = parse_text((tmp_path / "report.yaml").read_text(encoding="utf-8"))
    assert table.flags == () and yaml.flags == (), (table.flags, yaml.flags)
    assert table.tool_build == yaml.tool_build or table.tool_build is None
    got, expected = table.values(), yaml.values()
    assert len(got) >= 6 and set(got) <= set(expected), sorted(set(got) - set(expected))
    scientific = "--sn" in options  # 3 to 6 significant digits, else 2 decimals
    for name, value in got.items():
        tolerance = 0.005 * abs(expected[name]) if scientific else 0.0051
        assert abs(value - expected[name]) <= tolerance + 1e-9, (name, value, expected[name])


def _split(stdout: str) -> tuple[str, str]:
    """fio --output-format=normal,json: (the normal text, the JSON report) of one run."""
    lines = stdout.split("\n")
    start = lines.index("{")
    end = lines.index("}", start)
    return "\n".join(lines[:start] + lines[end + 1:]), "\n".join(lines[start:end + 1]) + "\n"


def _fio_tolerance(name: str, exact: float) -> float:
    """The text's rounding: rates to 3-4 significant digits, latencies to 2 decimals (means) or whole units
    (min, max, percentiles: fio rounds those up) of usec, or of msec from 10 ms."""
    if name.endswith(("_iops", "_bw")):
        return 0.006 * abs(exact) + 0.5
    return max(0.006 * abs(exact), 1001.0 if exact >= 10_000 else 1.01)


FIO = [
    ("json", ["--name=r", "--rw=randread", "--bs=4k", "--size=2M", "--ioengine=psync"]),
    ("json+", ["--name=m", "--rw=randrw", "--rwmixread=70", "--bs=4k", "--size=2M", "--ioengine=psync"]),
    ("json", ["--name=w", "--rw=write", "--bs=16k", "--size=2M", "--ioengine=psync", "--numjobs=2",
              "--group_reporting"]),
    ("json", ["--name=a", "--rw=read", "--bs=4k", "--size=1M", "--ioengine=psync", "--name=b", "--rw=write",
              "--bs=4k", "--size=1M", "--ioengine=psync", "--filename=b.dat"]),
    ("json", ["--name=l", "--rw=randread", "--bs=4k", "--size=2M", "--ioengine=libaio", "--iodepth=4",
              "--lat_percentiles=1"]),
    ("json", ["--name=u", "--rw=read", "--bs=64k", "--size=4M", "--ioengine=psync", "--unit_base=1"]),  # bit/s
    ("json", ["--name=n", "--rw=randread", "--bs=4k", "--size=2M", "--ioengine=psync", "--numjobs=2"]),  # per job
]
_STAGGERED = re.compile(r"STAGGERED: fio's (?:summary of|JSON gives) group (\d+) (?:gives )?(\w+) bw=.*", re.S)


def _said(flags: tuple[str, ...]) -> list[str]:
    """The flags, a STAGGERED one as its group and direction (the text's figures are rounded, the JSON's not)."""
    return [_STAGGERED.sub(r"STAGGERED group \1 \2", flag) for flag in flags]


@pytest.mark.parametrize(("form", "options"), FIO, ids=lambda o: o if isinstance(o, str) else " ".join(o))
def test_fio_text_and_json_of_one_run_agree(form: str, options: list[str], tmp_path: Path) -> None:
    proc = _run(["fio", *options, f"--output-format=normal,{form}"], tmp_path)
    text, report = _split(proc.stdout)
    from_text = parse_text(text + proc.stderr, "fio")
    from_json = parse_text(report + proc.stderr, "fio")
    assert parse_text(text + proc.stderr).values() == from_text.values()  # recognized without --tool
    assert from_text.flags[0].startswith("TEXT_OUTPUT: "), from_text.flags
    assert _said(from_text.flags[1:]) == _said(from_json.flags), (from_text.flags, from_json.flags)
    got, expected = from_text.values(), from_json.values()
    assert set(got) == set(expected) and any(n.endswith("_iops") for n in got), set(got) ^ set(expected)
    for name, value in got.items():
        assert abs(value - expected[name]) <= _fio_tolerance(name, expected[name]), (name, value, expected[name])


_SYSBENCH = {
    "events_per_second": r"events per second:\s+([\d.]+)", "total_time": r"total time:\s+([\d.]+)s",
    "events": r"total number of events:\s+(\d+)", "latency_min": r"min:\s+([\d.]+)",
    "latency_avg": r"avg:\s+([\d.]+)", "latency_max": r"max:\s+([\d.]+)",
    "latency_p95": r"95th percentile:\s+([\d.]+)", "latency_p99": r"99th percentile:\s+([\d.]+)",
    "operations_per_second": r"Total operations: \d+ \(\s*([\d.]+) per second\)",
    "mib_transferred": r"([\d.]+) MiB transferred", "mib_per_second": r"MiB transferred \(([\d.]+) MiB/sec\)",
}
SYSBENCH = [
    ["cpu", "--threads=1", "--cpu-max-prime=2000", "--events=200", "--time=0"],
    ["cpu", "--threads=2", "--cpu-max-prime=2000", "--events=400", "--time=0", "--percentile=99"],
    ["memory", "--memory-block-size=1K", "--memory-total-size=2G", "--memory-oper=write", "--time=0"],
    ["memory", "--memory-block-size=64K", "--memory-total-size=8G", "--memory-oper=read",
     "--memory-access-mode=rnd", "--memory-scope=local", "--threads=2", "--time=0"],
]


@pytest.mark.parametrize("options", SYSBENCH, ids=lambda o: " ".join(o))
def test_sysbench_figures_are_the_ones_its_log_prints(options: list[str], tmp_path: Path) -> None:
    proc = _run(["sysbench", *options, "run"], tmp_path)
    log = proc.stdout + proc.stderr
    parsed = parse_text(log, f"sysbench-{options[0]}")
    assert parsed.flags == () and parsed.echoed["test"] == options[0]
    printed = {name: float(m.group(1)) for name, pattern in _SYSBENCH.items() if (m := re.search(pattern, log))}
    values = {name: value for name, value in parsed.values().items() if name in _SYSBENCH}
    assert len(printed) >= 7 and values == printed


@pytest.mark.parametrize("options", [["threads", "--events=200", "--time=0"],
                                     ["mutex", "--mutex-num=64", "--mutex-locks=1000", "--time=0"],
                                     ["fileio", "--file-total-size=1M", "--file-num=1", "--file-test-mode=seqrd",
                                      "--events=50", "--time=0"]],
                         ids=lambda o: o[0])
def test_sysbench_tests_without_a_parser_are_refused_naming_the_test(options: list[str], tmp_path: Path) -> None:
    """threads, mutex and fileio reports are not read: refused as such, never read as a cpu or memory figure."""
    if options[0] == "fileio":
        _run(["sysbench", *options, "prepare"], tmp_path)
    proc = _run(["sysbench", *options, "run"], tmp_path)
    for tool in ("sysbench", None):
        with pytest.raises(ParseFailure, match="other tests than cpu and memory are not supported") as failure:
            parse_text(proc.stdout + proc.stderr, tool)
        assert failure.value.reason == "unknown-format" and options[0] in failure.value.detail
    with pytest.raises(ParseFailure) as failure:
        parse_text(proc.stdout + proc.stderr, "sysbench-cpu")
    assert failure.value.reason in ("wrong-tool", "unknown-format")
