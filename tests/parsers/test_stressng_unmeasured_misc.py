"""A miscellaneous metric stress-ng printed as 0 because it timed nothing is no figure (stressng_untimed).
Real stress-ng 0.15.06 captures (tests/corpus/debian12-x86_64, commands in COMMANDS.tsv): an hdd run that wrote
only (`0.00 MB/sec read rate`, `mbsec-read-rate: 0.000000` in its --yaml report) and an mlock run that timed no
munlock (`0.00 nanosecs per munlock call`). Read as figures, they were the slowest read rate and the fastest
munlock ever measured. A rate of events counted over the run (`0.00 major page faults per sec`) is a figure."""

from __future__ import annotations

import pytest
from podtax.parsers import parse_text
from podtax.parsers.stressng_names import misc_desc, misc_metric, yaml_key
from podtax.parsers.stressng_untimed import untimed, untimed_key

from tests.parsers.corpus_index import CORPUS, read_text

DEBIAN = CORPUS / "debian12-x86_64"


@pytest.mark.parametrize("name", ["stress-ng-hdd-1-yaml.log", "stress-ng-hdd-1-yaml.yaml"])
def test_a_read_rate_of_a_run_that_did_not_read_is_left_out(name: str) -> None:
    got = parse_text(read_text(DEBIAN / name), "stress-ng")
    values = got.values()
    assert "mb_sec_read_rate" not in values
    assert round(values["mb_sec_write_rate"], 2) == 2795.87  # `2795.87 MB/sec write rate`
    assert round(values["mb_sec_read_write_combined_rate"], 2) == 2795.87
    assert values["bogo_ops"] == 14759 and got.flags == ()


def test_a_time_per_call_of_calls_never_timed_is_left_out() -> None:
    values = parse_text(read_text(DEBIAN / "stress-ng-mlock-1-brief.log"), "stress-ng").values()
    assert "nanosecs_per_munlock_call" not in values
    assert values["nanosecs_per_mlock_call"] == 2669.42 and values["bogo_ops_per_second_real"] == 9010.18


def test_a_rate_of_events_that_did_not_happen_is_a_figure() -> None:
    """`--class interrupt --all 1`: the fault stressor counts the run's major page faults over its time (none
    here: no swap), so its 0 is measured, unlike a rate of work it timed none of."""
    values = parse_text(read_text(DEBIAN / "stress-ng-class-interrupt-all-1.log"), "stress-ng").values()
    assert values["fault_major_page_faults_per_sec"] == 0.0
    assert values["fault_minor_page_faults_per_sec"] == 1645.13 and values["fault_nanosecs_per_page_fault"] == 1904.73
    assert len([n for n in values if n.endswith("_bogo_ops")]) == 27


# (stressor, description as printed, 0 is stress-ng's fallback for nothing timed), read off its sources
_CASES = [
    ("hdd", "MB/sec read rate (geometic mean of 1 instances)", True),  # (duration > 0.0) ? bytes / duration : 0.0
    ("hdd", "MB/sec read/write combined rate", True),
    ("pseek", "MB/sec write rate", True),
    ("llc-affinity", "MB per sec memory read rate", True),  # its own read time
    ("llc-affinity", "MB pec sec memory write rate", True),
    ("mlock", "nanosecs per munlock call (geometic mean of 1 instances)", True),  # count > 0 ? d / count : 0
    ("nop", "nanosecs per nop instruction", True),
    ("nop", "picosecs per nop instruction (geometic mean of 1 instances)", True),  # 0.15 to 0.19
    ("qsort", "qsort comparisons per sec", True),
    ("sockpair", "MB written per sec", True),  # the time of its writes
    ("atomic", "__atomic_add_fetch8 atomic ops per sec", True),  # `%s atomic ops per sec`, its own time
    ("ioport", "nanosecs per inb(0x80) op", True),
    # a rate over the whole run (duration = stress_time_now() - t_start): its 0 is measured
    ("mmaptorture", "pages locked per sec (geometric mean of 1 instance)", False),  # mlock refused (a pod)
    ("mmaptorture", "pages mapped per sec", False),
    ("fanotify", "opens/sec", False),
    ("swap", "pages swapped out per second", False),
    ("llc-affinity", "CPU affinity changes per sec", False),
    ("chattr", "successful chattr flags set per sec", False),
    ("opcode", "forks per sec (geometic mean of 2 instances)", False),
    ("sem", "sem_wait calls per sec", False),
    ("uprobe", "MB trace data per second", False),
    ("icmp-flood", "MB written per sec", False),  # the same words as sockpair's, over the run
    ("rdrand", "million random bits per sec", False),
    ("fault", "major page faults per sec (geometic mean of 1 instances)", False),
    ("pipeherd", "context switches per sec", False),
    # crit_count > 0 ? interruptions * 1e9 / crit_count : 0.0, crit_count its critical sections run (its ops, not a
    # timed count): a run of them with no interruption is a measured 0 (review r10, M2)
    ("rseq", "critical section interruptions per billion rseq ops", False),
    # a count or a share, or a time set only when timed
    ("opcode", "% opcodes generated SIGFPE (geometic mean of 2 instances)", False),
    ("numa", "NUMA misses per sec", False),
    ("vm", "mmaps total", False),
    ("vm", "ms mmap min. duration", False),  # set only when an mmap was timed: 0.00 is under 0.005 ms
    ("vdso", "nanosecs per call (excluding test overhead)", False),  # set only when timed
    ("x86syscall", "nanosecs per call (excluding test overhead)", False),
    ("nanosleep", "nanosec sleep underrun", False),
    ("vdso", "nanosecs for test overhead", False),
]


@pytest.mark.parametrize(("stressor", "printed", "no_figure"), _CASES)
def test_only_stress_ngs_0_for_nothing_timed_is_no_figure(stressor: str, printed: str, no_figure: bool) -> None:
    assert untimed(0.0, stressor, printed) is no_figure
    assert untimed(0.01, stressor, printed) is False


@pytest.mark.parametrize(("stressor", "printed", "no_figure"), _CASES)
def test_a_table_and_a_yaml_report_agree(stressor: str, printed: str, no_figure: bool) -> None:
    """The `--yaml` report names a metric by its key (stress-ng's yamlify of the description)."""
    assert untimed_key(0.0, stressor, yaml_key(misc_desc(printed))) is no_figure


_LOG = """stress-ng: info:  [9] setting to a 1 second run per stressor
stress-ng: info:  [9] dispatching hogs: 1 {name}
stress-ng: metrc: [9] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [9]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [9] {name:<12s}       1000      1.00      0.10      0.80      1000.00        1111.11
stress-ng: metrc: [9] miscellaneous metrics:
{misc}stress-ng: info:  [9] successful run completed in 1.00s
"""
_YAML = """---
system-info:
      stress-ng-version: 0.19.02
metrics:
    - stressor: {name}
      bogo-ops: 1000
      bogo-ops-per-second-usr-sys-time: 1111.111111
      bogo-ops-per-second-real-time: 1000.000000
      wall-clock-time: 1.000000
      user-time: 0.100000
      system-time: 0.800000
      cpu-usage-per-instance: 90.000000
      max-rss: 2548
{misc}...
"""


@pytest.mark.parametrize(("name", "kept", "left_out"), [
    ("mmaptorture", ["pages locked per sec", "pages mapped per sec"], []),
    ("swap", ["pages swapped out per second"], []),
    ("vm", ["ms mmap min. duration", "mmaps total"], []),
    ("vdso", ["nanosecs per call (excluding test overhead)", "nanosecs for test overhead"], []),
    ("nop", [], ["picosecs per nop instruction"]),
    ("hdd", ["MB/sec write rate"], ["MB/sec read rate"]),
])
def test_a_measured_0_is_kept_in_a_table_and_in_yaml(name: str, kept: list[str], left_out: list[str]) -> None:
    """Printed as stress-ng prints them; 0.00 for every misc metric but hdd's write rate."""
    figures = {d: 0.0 for d in [*kept, *left_out]} | ({"MB/sec write rate": 2795.87} if name == "hdd" else {})
    misc = "".join(f"stress-ng: metrc: [9] {name:<12s} {v:12.2f} {d} (geometric mean of 1 instance)\n"
                   for d, v in figures.items())
    yaml = "".join(f"      {yaml_key(d)}: {v:f}\n" for d, v in figures.items())
    for text in (_LOG.format(name=name, misc=misc), _YAML.format(name=name, misc=yaml)):
        got = parse_text(text, "stress-ng").values()
        assert {misc_metric(d)[0] for d in kept} <= set(got), text
        assert not {misc_metric(d)[0] for d in left_out} & set(got), text
        assert all(got[misc_metric(d)[0]] == 0.0 for d in kept if figures[d] == 0.0)


@pytest.mark.parametrize("name", ["stress-ng-llc-affinity-1-yaml.log", "stress-ng-llc-affinity-1-yaml.yaml"])
def test_llc_affinity_write_rate_misspelt_pec_is_a_rate(name: str) -> None:
    """0.15.x's llc-affinity prints `MB pec sec memory write rate` (sic): it was read as lower-is-better with the
    description as its unit, so a faster node would have scored worse."""
    got = {m.name: m for m in parse_text(read_text(DEBIAN / name), "stress-ng").metrics}
    write, read = got["mb_pec_sec_memory_write_rate"], got["mb_per_sec_memiry_read_rate"]
    assert (write.unit, write.higher_is_better) == ("MB/s", True) == (read.unit, read.higher_is_better)
    assert round(write.value, 2) == 508.78 and round(read.value, 2) == 1556.53
