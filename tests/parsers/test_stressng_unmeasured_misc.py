"""A miscellaneous metric stress-ng printed as 0 because it timed nothing is no figure (stressng_names.unmeasured).
Real stress-ng 0.15.06 captures (tests/corpus/debian12-x86_64, commands in COMMANDS.tsv): an hdd run that wrote
only (`0.00 MB/sec read rate`, `mbsec-read-rate: 0.000000` in its --yaml report) and an mlock run that timed no
munlock (`0.00 nanosecs per munlock call`). Read as figures, they were the slowest read rate and the fastest
munlock ever measured."""

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


@pytest.mark.parametrize(("printed", "no_figure"), [
    ("MB/sec read rate (geometic mean of 1 instances)", True),
    ("nanosecs per munlock call (geometic mean of 1 instances)", True),
    ("forks per sec (geometic mean of 2 instances)", True),
    ("% opcodes generated SIGFPE (geometic mean of 2 instances)", False),  # a share of 0 is a figure
    ("NUMA misses per sec", False),  # a count of 0 is a figure
    ("mmaps failed", False),
])
def test_only_a_rate_or_a_time_of_0_is_no_figure(printed: str, no_figure: bool) -> None:
    _, unit, better = misc_metric(printed)
    assert unmeasured(0.0, unit, better) is no_figure
    assert unmeasured(0.01, unit, better) is False
