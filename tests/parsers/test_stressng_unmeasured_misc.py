"""A miscellaneous metric stress-ng printed as 0 because it timed nothing is no figure (stressng_names.unmeasured).
Real stress-ng 0.15.06 captures (tests/corpus/debian12-x86_64, commands in COMMANDS.tsv): an hdd run that wrote
only (`0.00 MB/sec read rate`, `mbsec-read-rate: 0.000000` in its --yaml report) and an mlock run that timed no
munlock (`0.00 nanosecs per munlock call`). Read as figures, they were the slowest read rate and the fastest
munlock ever measured. A rate of events counted over the run (`0.00 major page faults per sec`) is a figure."""

from __future__ import annotations

import pytest
from podtax.parsers import parse_text
from podtax.parsers.stressng_names import misc_metric, unmeasured

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


@pytest.mark.parametrize(("printed", "no_figure"), [
    ("MB/sec read rate (geometic mean of 1 instances)", True),
    ("nanosecs per munlock call (geometic mean of 1 instances)", True),
    ("forks per sec (geometic mean of 2 instances)", True),
    ("% opcodes generated SIGFPE (geometic mean of 2 instances)", False),  # a share of 0 is a figure
    ("NUMA misses per sec", False),  # a count of 0 is a figure
    ("mmaps failed", False),
    ("major page faults per sec (geometic mean of 1 instances)", False),  # events counted over the run
    ("context switches per sec", False),
    ("nanosec sleep underrun", False),  # a time that may be none
    ("nanosecs for test overhead", False),
    ("nanosecs per call (excluding test overhead)", True),
])
def test_only_a_rate_of_work_or_a_time_of_0_is_no_figure(printed: str, no_figure: bool) -> None:
    _, unit, better = misc_metric(printed)
    assert unmeasured(0.0, unit, better) is no_figure
    assert unmeasured(0.01, unit, better) is False


@pytest.mark.parametrize("name", ["stress-ng-llc-affinity-1-yaml.log", "stress-ng-llc-affinity-1-yaml.yaml"])
def test_llc_affinity_write_rate_misspelt_pec_is_a_rate(name: str) -> None:
    """0.15.x's llc-affinity prints `MB pec sec memory write rate` (sic): it was read as lower-is-better with the
    description as its unit, so a faster node would have scored worse."""
    got = {m.name: m for m in parse_text(read_text(DEBIAN / name), "stress-ng").metrics}
    write, read = got["mb_pec_sec_memory_write_rate"], got["mb_per_sec_memiry_read_rate"]
    assert (write.unit, write.higher_is_better) == ("MB/s", True) == (read.unit, read.higher_is_better)
    assert round(write.value, 2) == 508.78 and round(read.value, 2) == 1556.53
