"""hdparm logs with several devices or several runs are refused, never read as one device's one run
(the timings of the last block used to overwrite the others and pass for the first device's)."""

from __future__ import annotations

import pytest
from podtax.parsers import Parsed, ParseFailure, parse_text

SDA = ("\n/dev/sda:\n Timing cached reads:   20000 MB in  2.00 seconds = 10000.00 MB/sec\n"
       " Timing buffered disk reads: 1500 MB in  3.00 seconds = 500.00 MB/sec\n")
SDB = ("\n/dev/sdb:\n Timing cached reads:   20000 MB in  2.00 seconds = 10000.00 MB/sec\n"
       " Timing buffered disk reads:  30 MB in  3.00 seconds =  10.00 MB/sec\n")


@pytest.mark.parametrize("tool", [None, "hdparm"])
def test_two_devices_in_one_log_are_refused(tool: str | None) -> None:  # hdparm -tT /dev/sda /dev/sdb
    with pytest.raises(ParseFailure) as caught:
        parse_text(SDA + SDB, tool)
    assert caught.value.reason == "unknown-format"
    assert "/dev/sda, /dev/sdb" in caught.value.detail


def test_repeated_runs_in_one_log_are_refused() -> None:  # for i in 1 2 3; do hdparm -t /dev/sda; done
    runs = "".join(f"\n/dev/sda:\n Timing buffered disk reads: {mb} MB in  3.00 seconds = {mb / 3:.2f} MB/sec\n"
                   for mb in (1500, 300, 1200))
    with pytest.raises(ParseFailure) as caught:
        parse_text(runs, "hdparm")
    assert caught.value.reason == "unknown-format"
    assert "3 times" in caught.value.detail


def test_one_device_one_run_still_parses() -> None:
    parsed = parse_text(SDA, "hdparm")
    assert isinstance(parsed, Parsed)
    assert parsed.echoed["device"] == "/dev/sda"
    assert parsed.metric("disk_read_mb_per_second").value == 500.0
    assert parsed.metric("cached_read_mb_per_second").value == 10000.0


def test_other_dev_lines_are_not_taken_for_the_timed_device() -> None:  # blkid output before hdparm's
    parsed = parse_text('/dev/sda1: UUID="abc" TYPE="ext4"\n' + SDA, "hdparm")
    assert isinstance(parsed, Parsed)
    assert parsed.echoed["device"] == "/dev/sda"
    assert parsed.metric("disk_read_mb_per_second").value == 500.0
