"""Real runs: the Debian sysbench, stress-ng and fio, with tiny parameters and the templates' own
argv builders; their output must parse to positive figures without flags."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from podtax import templates
from podtax.parsers import ParseFailure, parse_run

CASES = [
    ("sysbench-cpu", {"threads": 1, "max_prime": 2000, "events": 50, "time": 10}),
    ("sysbench-memory", {"threads": 1, "operation": "write", "block_size": "1K", "total_size": "4G", "time": 2}),
    # 4G: a run under 0.1 s is refused (thread start-up). --memory-oper=none moves no memory: no `MiB transferred`
    # line, operations per second is its figure
    ("sysbench-memory", {"threads": 1, "operation": "none", "block_size": "1K", "total_size": "4G", "time": 1}),
    ("stress-ng-cpu", {"threads": 1, "method": "all", "timeout": 1}),
    ("fio", {"rw": "randread", "bs": "4K", "size": "4M", "iodepth": 1, "direct": False, "runtime": 1}),
    ("fio", {"rw": "write", "bs": "64K", "size": "4M", "iodepth": 1, "direct": False, "runtime": 1}),
]


def _version(template: templates.Template) -> str | None:
    proc = subprocess.run(list(template.version_argv), capture_output=True, text=True, timeout=30, check=False)
    return (proc.stdout or proc.stderr).strip() or None


@pytest.mark.parametrize(("test", "params"), CASES,
                         ids=[f"{c[0]}-{c[1].get('rw', c[1].get('operation', ''))}" for c in CASES])
def test_real_run_parses(test: str, params: dict[str, Any], tmp_path: Path) -> None:
    template = templates.get(test)
    if shutil.which(template.tool) is None:
        pytest.skip(f"{template.tool} is not installed (apt-get install {template.tool})")
    argv = template.build_argv(params, workdir=str(tmp_path))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    parsed = parse_run(test, proc.stdout, proc.stderr, proc.returncode, params, _version(template))
    primary = template.primary_metric(template.validate(params))
    assert parsed.metric(primary).value > 0
    assert parsed.tool == template.tool and parsed.tool_version
    # no flag, ROUNDED_RUNTIME included: the fio template runs --time_based (a 4M write alone ends in 1 ms)
    assert parsed.flags == (), parsed.flags
    if test == "sysbench-cpu":
        assert parsed.values()["events"] == 50 and parsed.echoed["max_prime"] == 2000
    if test == "stress-ng-cpu":
        assert parsed.echoed["threads"] == 1 and parsed.tool_build


@pytest.mark.parametrize("option", ["--log-brief", "--timestamp"])
def test_real_stressng_log_options_parse_like_the_plain_log(option: str, tmp_path: Path) -> None:
    """`--log-brief` drops every `stress-ng: info:  [pid] ` prefix, `--timestamp` puts the time in it: a
    user's saved log in either form is read (with --tool and recognized without), with the same metrics
    as the plain form."""
    if shutil.which("stress-ng") is None:
        pytest.skip("stress-ng is not installed (apt-get install stress-ng)")
    from podtax.parsers import parse_text

    argv = ["stress-ng", "--cpu", "1", "--cpu-ops", "500", "--metrics-brief"]
    texts = [subprocess.run(argv + extra, capture_output=True, text=True, timeout=120, check=True, cwd=tmp_path)
             for extra in ([], [option])]
    plain, other = (p.stdout + p.stderr for p in texts)
    assert other != plain and "bogo ops" in other, other
    for tool in ("stress-ng-cpu", None):
        got = parse_text(other, tool)
        assert got.tool == "stress-ng" and got.flags == ()
        assert [m.name for m in got.metrics] == [m.name for m in parse_text(plain, tool).metrics]
        assert got.values()["bogo_ops"] == 500
    cut = other[:other.index("stressor  ")]  # killed before its table: refused as such
    cut = cut[:cut.rfind("\n") + 1]
    with pytest.raises(Exception, match="truncated"):
        parse_text(cut, "stress-ng-cpu")


def test_real_sysbench_refusing_an_option_before_its_banner_is_a_bad_argument() -> None:
    """sysbench checks some values before it prints its banner (`--percentile=99.9`: whole numbers only)."""
    if shutil.which("sysbench") is None:
        pytest.skip("sysbench is not installed (apt-get install sysbench)")
    proc = subprocess.run(["sysbench", "cpu", "--percentile=99.9", "run"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode != 0 and "sysbench 1." not in proc.stdout + proc.stderr
    with pytest.raises(ParseFailure) as failure:
        parse_run("sysbench-cpu", proc.stdout, proc.stderr, proc.returncode)
    assert failure.value.reason == "bad-argument" and "percentile" in failure.value.detail


def test_real_fio_terse_output_is_read(tmp_path: Path) -> None:
    """`--minimal` / `--output-format=terse` is one `3;fio-3.33;...` line: read (it was refused), its read IOPS and
    bandwidth those of the line's fields 8 and 7, TERSE_OUTPUT saying what terse does not echo."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (apt-get install fio)")
    from podtax.parsers import parse_text
    from podtax.parsers.fio_terse import TERSE_FLAG

    proc = subprocess.run(["fio", "--name=t", "--rw=randread", "--bs=4k", "--size=2M", "--runtime=1",
                           "--ioengine=psync", "--minimal"], capture_output=True, text=True, timeout=120,
                          check=True, cwd=tmp_path)
    fields = proc.stdout.split(";")
    for tool in ("fio", None):
        parsed = parse_text(proc.stdout + proc.stderr, tool)
        figures = {m.name: m.value for m in parsed.metrics}
        assert figures["read_iops"] == float(fields[7]) > 0 and figures["read_bw"] == float(fields[6])
        # a fast device reads 2 MiB in under 20 ms: fio's whole-ms runtime is then flagged, nothing else is
        others = [f for f in parsed.flags if f != TERSE_FLAG and not f.startswith("ROUNDED_RUNTIME: ")]
        assert TERSE_FLAG in parsed.flags and others == [] and parsed.tool_version == fields[1].removeprefix("fio-")


def test_real_fio_job_error_quotes_fios_own_words(tmp_path: Path) -> None:
    """A job that fails (error 22: no size for a new file) is `fatal`, with fio's stderr line quoted
    whether stderr comes after the JSON (the agent's capture) or before it (`2>&1` into one file)."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed (apt-get install fio)")
    from podtax.parsers import ParseFailure, parse_text

    proc = subprocess.run(["fio", "--name=nosize", "--filename=new.dat", "--rw=read", "--runtime=1",
                           "--output-format=json"], capture_output=True, text=True, timeout=120, check=False,
                          cwd=tmp_path)
    assert '"error" : 22' in proc.stdout and "specify size" in proc.stderr, (proc.stdout[:300], proc.stderr)
    cases = [lambda: parse_run("fio", proc.stdout, proc.stderr, proc.returncode),
             lambda: parse_text(proc.stderr + proc.stdout, "fio"), lambda: parse_text(proc.stderr + proc.stdout)]
    for parse in cases:
        with pytest.raises(ParseFailure) as failure:
            parse()
        assert failure.value.reason in ("fatal", "nonzero-exit") and "you need to specify size=" in \
            failure.value.detail, failure.value.detail


@pytest.mark.parametrize("verbosity", ["0", "2"])
def test_real_sysbench_below_verbosity_3_is_asked_about_its_verbosity(verbosity: str) -> None:
    """--verbosity below 3 hides sysbench's banner and report (NOTICE lines): it prints nothing and exits 0."""
    if shutil.which("sysbench") is None:
        pytest.skip("sysbench is not installed (apt-get install sysbench)")
    argv = ["sysbench", "cpu", "--cpu-max-prime=200", "--events=50", f"--verbosity={verbosity}", "run"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert (proc.returncode, proc.stdout + proc.stderr) == (0, "")
    version = subprocess.run(["sysbench", "--version"], capture_output=True, text=True, timeout=60, check=False)
    for text in ("", f"$ {' '.join(argv)}\n", f"{version.stdout}$ {' '.join(argv)}\n", version.stdout):
        with pytest.raises(ParseFailure) as info:
            parse_run("sysbench-cpu", text, proc.stderr, proc.returncode)
        assert info.value.reason == "empty" and "was sysbench run with --verbosity below 3?" in info.value.detail
    with pytest.raises(ParseFailure) as info:  # its run's banner printed: verbosity 3, a run killed at its start
        parse_run("sysbench-cpu", "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\n", "", 0)
    assert info.value.reason == "truncated" and "verbosity" not in info.value.detail
