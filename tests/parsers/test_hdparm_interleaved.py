"""hdparm over several devices in one stream (`2>&1`), captured with hdparm 9.65 on a Debian 12 VM (sweep hB):
hdparm flushes stdout after each `Timing ... reads:` label but not after its figures, so a later device's error,
written to stderr at once, lands inside the timed device's last timing line and the figures follow on the next
line. The timing line was refused as `truncated` (`-tT`: "without its figures: the run was cut short") or as a
form podtax does not read (`-T`, `-t`), though the device's figures are all in the log."""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, parse_text

from tests.parsers.test_found_captures import parse


def test_tT_then_a_denied_device_reads_the_timed_device() -> None:
    """`hdparm -tT /dev/loop0 /dev/vda` without CAP_SYS_RAWIO (exit 1): loop0's timings, vda's error flagged."""
    parsed = parse("hdparm-9.65-tT-loop-then-denied-device.log")
    assert parsed.values() == {"read_mb_per_second": 659.97, "cached_read_mb_per_second": 8972.16,
                               "cached_read_mb": 17926, "cached_read_time": 2.0,
                               "disk_read_mb_per_second": 659.97, "disk_read_mb": 64, "disk_read_time": 0.1}
    assert parsed.echoed == {"device": "/dev/loop0", "mode": "disk"}
    assert any(f.startswith("ERRORS:") and "/dev/vda: Operation not permitted" in f for f in parsed.flags)


def test_T_then_a_denied_device() -> None:
    parsed = parse("hdparm-9.65-T-loop-then-denied-device.log", "hdparm")
    assert parsed.values() == {"read_mb_per_second": 8489.2, "cached_read_mb_per_second": 8489.2,
                               "cached_read_mb": 16962, "cached_read_time": 2.0}
    assert parsed.echoed == {"device": "/dev/loop0", "mode": "cached"}
    assert any("/dev/vda: Operation not permitted" in f for f in parsed.flags)


def test_t_then_a_missing_device() -> None:
    parsed = parse("hdparm-9.65-t-loop-then-missing-device.log")
    assert parsed.values() == {"read_mb_per_second": 1011.04, "disk_read_mb_per_second": 1011.04,
                               "disk_read_mb": 64, "disk_read_time": 0.06}
    assert parsed.echoed["device"] == "/dev/loop0"
    assert any("/dev/nonexistent: No such file or directory" in f for f in parsed.flags)


def test_a_64_mib_loop_device_read_to_its_end() -> None:
    """`hdparm -t /dev/loop0` on a 64 MiB loop device: hdparm stops at the device's end (0.39 s, not 3 s)."""
    assert parse("hdparm-9.65-t-loop-64mib.log").values() == {
        "read_mb_per_second": 163.91, "disk_read_mb_per_second": 163.91, "disk_read_mb": 64, "disk_read_time": 0.39}


def test_a_label_whose_figures_never_came_is_still_cut() -> None:
    """The mending needs the figures on the next line: a label, the message and nothing else stays refused."""
    text = "\n/dev/loop0:\n Timing cached reads:   /dev/vda: Operation not permitted\n"
    with pytest.raises(ParseFailure) as failure:
        parse_text(text, "hdparm")
    assert failure.value.reason in ("truncated", "unknown-format"), failure.value


def test_the_flush_message_is_not_taken_for_another_device() -> None:
    """`BLKFLSBUF failed: ...` inside the line is the timed file's own failure: still refused as not flushed."""
    text = "\nsparse.img:\n Timing buffered disk reads: BLKFLSBUF failed: Inappropriate ioctl for device\n" \
           "562 MB in  3.05 seconds = 184.29 MB/sec\n"
    with pytest.raises(ParseFailure) as failure:
        parse_text(text, "hdparm")
    assert "could not flush the buffer cache" in failure.value.detail
