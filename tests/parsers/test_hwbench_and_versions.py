"""Cross-checks: stress-ng figures against hwbench's independent parser (`output` files), the
`--yaml` report against the table of the same run, and versions taken from recorded `--version`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text

from tests.parsers.corpus_index import CORPUS, read_text

HWBENCH = CORPUS / "stress-ng" / "hwbench"
RUN_DIRS = sorted(p.parent for p in HWBENCH.rglob("output"))
DEBIAN = CORPUS / "debian12-x86_64"


def _joined(run_dir: Path) -> str:
    parts = [read_text(run_dir / name) for name in ("stdout", "stderr") if (run_dir / name).exists()]
    return "\n".join(p for p in parts if p.strip())


@pytest.mark.parametrize("run_dir", RUN_DIRS, ids=lambda p: p.relative_to(HWBENCH).as_posix())
def test_hwbench_output(run_dir: Path) -> None:
    expected = json.loads(read_text(run_dir / "output"))
    if isinstance(expected, list):  # stressngmethods: the list of cpu methods, from a --cpu-method error
        with pytest.raises(ParseFailure) as info:
            parse_text(_joined(run_dir), "stress-ng")
        assert info.value.reason == "bad-argument"
        assert set(expected) <= set(info.value.detail.replace(":", " ").split())
        return
    values = parse_text(_joined(run_dir), "stress-ng").values()
    assert values["real_time"] == pytest.approx(expected.pop("effective_runtime"), abs=0.005)
    if "bogo ops/s" in expected:
        assert values["bogo_ops_per_second_real"] == pytest.approx(expected["bogo ops/s"], abs=0.005)
    compared = 0
    for name, figure in expected.items():
        if isinstance(figure, dict) and "avg_speed" in figure:  # memrate
            assert values[f"{name}_mb_per_sec"] == pytest.approx(figure["avg_speed"], abs=0.005)
            compared += 1
    for key, metric in (("avg_read", "mb_per_sec_memory_read_rate"), ("avg_write", "mb_per_sec_memory_write_rate"),
                        ("avg_Mflop/s", "mflop_per_sec_double_precision_compute_rate")):
        if key in expected:  # stream
            assert values[metric] == pytest.approx(expected[key], abs=0.005)
            compared += 1
    assert compared or "bogo ops/s" in expected


def test_yaml_matches_table_of_same_run() -> None:
    table = parse_text(read_text(DEBIAN / "stress-ng-cpu-2-matrixprod.log")).values()
    yaml = parse_text(read_text(DEBIAN / "stress-ng-cpu-2-matrixprod.yaml"))
    assert yaml.tool_version == "0.15.06"
    for name in ("bogo_ops", "real_time", "usr_time", "sys_time", "bogo_ops_per_second_real",
                 "bogo_ops_per_second_usr_sys"):
        assert yaml.values()[name] == pytest.approx(table[name], abs=0.006), name


def test_hwbench_yaml_matches_table() -> None:
    run = HWBENCH / "stressng" / "v02103b"
    yaml = parse_text(read_text(run / "stressngmatrixprod.yaml"), "stress-ng-cpu")
    table = parse_run("stress-ng-cpu", read_text(run / "stdout"), read_text(run / "stderr"),
                      recorded_version=read_text(run / "version-stdout"))
    assert yaml.values()["bogo_ops"] == table.values()["bogo_ops"] == 3257280
    assert yaml.tool_version == table.tool_version == "0.21.03"
    assert table.tool_build == "gcc 14.3.1, x86_64 Linux 7.2.0-rc2"


@pytest.mark.parametrize("run_dir", [p for p in RUN_DIRS if (p / "version").exists()],
                         ids=lambda p: p.relative_to(HWBENCH).as_posix())
def test_recorded_versions(run_dir: Path) -> None:
    """hwbench recorded `stress-ng --version`; the logs themselves never print it."""
    recorded = read_text(run_dir / "version-stdout")
    try:
        parsed = parse_run("stress-ng-cpu", read_text(run_dir / "stdout"), read_text(run_dir / "stderr"),
                           recorded_version=recorded)
    except ParseFailure as failure:  # qsort, memrate, ... are not the cpu stressor
        assert failure.reason in ("wrong-tool", "bad-argument")
        return
    assert parsed.tool_version == read_text(run_dir / "version").strip()
    assert parsed.tool_build and parsed.tool_build.startswith("gcc ")


def test_debian_version_files() -> None:
    recorded = read_text(DEBIAN / "stress-ng-version.txt")
    parsed = parse_run("stress-ng-cpu", "", read_text(DEBIAN / "stress-ng-cpu-2-matrixprod.log"),
                       requested={"threads": 2, "method": "matrixprod", "timeout": 2}, recorded_version=recorded)
    assert (parsed.tool_version, parsed.tool_build) == ("0.15.06", "gcc 12.2.0, x86_64 Linux 6.18.44-fc-v669")
    assert parsed.flags == ()
    sysbench = parse_run("sysbench-cpu", read_text(DEBIAN / "sysbench-cpu-default-time.log"),
                         recorded_version=read_text(DEBIAN / "sysbench-version.txt"))
    assert sysbench.tool_version == "1.0.20" and sysbench.flags == ()
    fio = parse_run("fio", read_text(DEBIAN / "fio-randread-4k-qd16.json"),
                    recorded_version=read_text(DEBIAN / "fio-version.txt"))
    assert fio.tool_version == "3.33"
    mismatch = parse_run("sysbench-cpu", read_text(DEBIAN / "sysbench-cpu-default-time.log"),
                         recorded_version="sysbench 1.0.18")
    assert any(f.startswith("VERSION_MISMATCH") for f in mismatch.flags)
