"""hdparm drops the device's buffer cache (ioctl BLKFLSBUF) before it times reads, and goes on when it cannot
(audit hT): on a regular file (`Inappropriate ioctl for device`) or without CAP_SYS_ADMIN, its `-t` "buffered
disk reads" may read the cache. Captured with stdout and stderr apart (as the runner does), the timing line was
whole and 321.41 MB/s of a sparse file was stored as the disk's speed. Real captures of hdparm 9.65 on this
project's Debian 12 machine: `hdparm -t sparse.img` (a 100 GiB sparse file) and `hdparm -T hd.img`."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64"
FLUSH = "BLKFLSBUF failed: Inappropriate ioctl for device\n"
DISK_STDOUT = "\nsparse.img:\n Timing buffered disk reads: 978 MB in  3.04 seconds = 321.41 MB/sec\n"
CACHED_STDOUT = "\nhd.img:\n Timing cached reads:   83588 MB in  1.99 seconds = 42080.67 MB/sec\n"


def test_a_disk_timing_without_the_cache_flushed_is_refused() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse_run("hdparm", DISK_STDOUT, FLUSH, 0, {"mode": "disk", "device": "/dev/sda"})
    assert failure.value.reason == "fatal", failure.value
    assert "BLKFLSBUF failed: Inappropriate ioctl for device" in failure.value.detail
    assert "not the disk's" in failure.value.detail and "regular file" in failure.value.detail


def test_the_same_run_in_one_stream_names_the_flush() -> None:
    """`2>&1`: the stderr line breaks the timing line (was: `unknown-format`, a form podtax does not read)."""
    with pytest.raises(ParseFailure) as failure:
        parse_text((CORPUS / "hdparm-t-regular-file.log").read_text(encoding="utf-8"))
    assert failure.value.reason == "fatal" and "could not flush the buffer cache" in failure.value.detail


def test_a_denied_flush_is_permission_denied() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse_run("hdparm", DISK_STDOUT, "BLKFLSBUF failed: Permission denied\n", 0, {"mode": "disk"})
    assert failure.value.reason == "permission-denied" and "CAP_SYS_ADMIN" in failure.value.detail


def test_a_cached_timing_needs_no_flush() -> None:
    """`-T` reads the cache on purpose: a failed flush changes nothing in it (two stderr lines, as captured)."""
    parsed = parse_run("hdparm", CACHED_STDOUT, FLUSH * 2, 0, {"mode": "cached", "device": "/dev/sda"})
    assert parsed.metric("read_mb_per_second").value == 42080.67
