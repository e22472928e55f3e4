"""Stressors stress-ng skipped (not supported here, or out of resources) must give no figure that looks measured.
Real captures, stress-ng 0.15.06 on this machine (tests/corpus-found/stress-ng-0.15.06-*-skipped*, commands in its
README): AppArmor is not enabled (`apparmor stressor will be skipped, ...`, at stress-ng's start) and the kernel has
no uprobe events (`uprobe: cannot set uprobe_event: ..., skipping stressor`, while it runs). Before: `--apparmor 1`
alone was `bad-argument` ("rejected its arguments"), `--cpu 1 --apparmor 1` read as a plain cpu run with no flag,
and `--cpu 1 --uprobe 1 --metrics` gave uprobe_bogo_ops 0 and uprobe_cpu_used_per_instance 15.62 as figures."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_text
from podtax.parsers.stressng_skips import skipped as skips_in

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"


def _capture(name: str) -> str:
    return (FOUND / f"stress-ng-0.15.06-{name}.log").read_text()


@pytest.mark.parametrize(("name", "said"), [
    ("apparmor-skipped", "`apparmor stressor will be skipped, AppArmor is not enabled`"),
    ("uprobe-skipped-brief", "`uprobe: cannot set uprobe_event: errno=2 (No such file or directory), skipping "),
    ("uprobe-skipped-metrics", "`uprobe: cannot set uprobe_event: errno=2"),
])
def test_a_run_whose_stressor_was_skipped_fails_saying_so(name: str, said: str) -> None:
    for tool in (None, "stress-ng"):
        with pytest.raises(ParseFailure) as failure:
            parse_text(_capture(name), tool)
        assert failure.value.reason == "fatal"
        assert failure.value.detail.startswith("stress-ng skipped its ") and said in failure.value.detail
        assert "it did not run, so there is no figure" in failure.value.detail


@pytest.mark.parametrize(("name", "skipped"), [("cpu-apparmor-skipped", "apparmor"),
                                               ("cpu-uprobe-skipped-brief", "uprobe"),
                                               ("cpu-uprobe-skipped-metrics-v", "uprobe")])
def test_a_skipped_stressor_beside_another_is_flagged_and_gives_no_figure(name: str, skipped: str) -> None:
    parsed = parse_text(_capture(name))
    values = parsed.values()
    # no figure of the skipped one; cpu's named as on a node where the skipped stressor ran (a run of several)
    assert values["cpu_bogo_ops"] > 0 and values["cpu_bogo_ops_per_second_real"] > 0
    assert not [key for key in values if not key.startswith("cpu_")]
    flag = next(f for f in parsed.flags if f.startswith("SKIPPED: "))
    assert f"skipped the {skipped} stressor" in flag and "no figure of it is read" in flag
    assert not [f for f in parsed.flags if f.startswith(("MISSING", "NO_WORK"))]
    assert parsed.echoed["stressors"] == "cpu"


def test_the_cpu_test_reads_its_cpu_row_beside_a_skipped_stressor() -> None:
    parsed = parse_text(_capture("cpu-apparmor-skipped"), "stress-ng-cpu")
    assert parsed.values()["bogo_ops_per_second_real"] == 1677.38
    assert any(f.startswith("SKIPPED: stress-ng skipped the apparmor stressor") for f in parsed.flags)


def test_a_stressor_skipped_by_some_instances_only_keeps_its_row() -> None:
    """stress-ng's summary names a stressor whose other instances worked (`skipped: 1: cpu (1)` beside `passed: 1:
    cpu (1)`): its row counts their bogo ops and is read, flagged by the count as before."""
    lines = _capture("cpu-apparmor-skipped").splitlines(keepends=True)[1:]  # without apparmor's skip
    lines.insert(-1, "stress-ng: info:  [10825] skipped: 1: cpu (1)\n")
    text = "".join(lines)
    parsed = parse_text(text)
    assert parsed.values()["bogo_ops"] == 1678
    assert any(f.startswith("SKIPPED: stress-ng skipped 1 stressor instance(s)") for f in parsed.flags)


def test_a_stressor_skipped_whole_and_one_skipped_in_part_are_both_told() -> None:
    """0.15.07 and later also count the skipped instances (`skipped: 2: apparmor (1) cpu (1)`): apparmor is named
    with what stress-ng said, and the count stays, as one cpu instance was skipped while the row counts the other."""
    text = _capture("cpu-apparmor-skipped").replace(
        "stress-ng: info:  [10825] successful",
        "stress-ng: info:  [10825] skipped: 2: apparmor (1) cpu (1)\nstress-ng: info:  [10825] successful")
    flags = [f for f in parse_text(text).flags if f.startswith("SKIPPED: ")]
    assert len(flags) == 2 and "2 stressor instance(s)" in flags[0] and "the apparmor stressor" in flags[1]


def test_a_stressor_skipped_in_some_instances_of_0_15_06_is_flagged_by_name() -> None:
    """0.15.06 counts no skipped instance (no `skipped: N` line): one of two vm instances found no memory and was
    skipped, the other's bogo ops are the row. Before: no flag, the figure read as two instances'."""
    text = ("stress-ng: info:  [100] setting to a 1 second run per stressor\n"
            "stress-ng: info:  [100] dispatching hogs: 2 vm\n"
            "stress-ng: info:  [102] vm: gave up trying to mmap, no available memory, skipping stressor\n"
            "stress-ng: warn:  [100] process [102] (vm) aborted early, out of system resources\n"
            + "".join(line.replace("cpu ", "vm  ").replace(" 1678 ", " 2363 ") + "\n"
                      for line in _capture("cpu-apparmor-skipped").splitlines() if "stress-ng: metrc:" in line)
            + "stress-ng: info:  [100] successful run completed in 1.00s\n")
    parsed = parse_text(text, "stress-ng")
    assert parsed.values()["bogo_ops"] == 2363
    [flag] = [f for f in parsed.flags if f.startswith("SKIPPED: ")]
    assert "skipped some instances of the vm stressor (`vm: gave up trying to mmap" in flag
    assert "fewer instances than dispatched" in flag


@pytest.mark.parametrize(("name", "skipped"), [("cpu-apparmor-skipped", "apparmor"),
                                               ("uprobe-skipped-brief", "uprobe")])
def test_a_journalctl_log_names_the_stressor_skipped(name: str, skipped: str) -> None:
    """Each line behind journalctl's `<date> <host> stress-ng[<pid>]: `: its pid was taken for stress-ng's, and
    the stressor named `stress-ng`."""
    text = "".join(f"Jul 28 16:19:31 localhost stress-ng[10825]: {line}"
                   for line in _capture(name).splitlines(keepends=True))
    try:
        said = next(f for f in parse_text(text, "stress-ng").flags if f.startswith("SKIPPED: "))
    except ParseFailure as failure:
        said = failure.detail
    assert f"skipped the {skipped} stressor" in said or f"skipped its {skipped} stressor" in said
    assert "stress-ng stressor" not in said and "stress-ng, " not in said


def test_not_skipping_a_stressor_is_no_skip() -> None:
    """`ioport cannot access port 0x80, not skipping stressor` (stress-ng goes on with it)."""
    text = (Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64"
            / "stress-ng-unknown-exclude.log").read_text()
    found = skips_in(text)
    assert "ioport" not in found and found["plugin"] == "plugin: no plugin-so specified, skipping stressor"
