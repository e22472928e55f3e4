"""The analyzer's file system turned read-only by the kernel mid-stream (ext4 mounted errors=remount-ro, an error
raised through /sys/fs/ext4/<dev>/trigger_fs_error, as after a disk error), then the operator's way back: stop the
analyzer, fsck, mount again, start it. Real analyzer process, parser, nats-server, DuckDB file on a loop device.
/healthz and the log said 'free space on its disk (or fix its permissions); storing resumes by itself': neither
helps, and it does not resume by itself. Needs root (a loop mount)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from tests.integration.harness import wait_for
from tests.integration.test_analyzer_write_fault import health, limited_analyzer, publish_logs

N = 50  # results before the fault, and as many after it


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def ext4(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A 128 MB ext4 image mounted errors=remount-ro at tmp_path/mnt: (image, mount point); unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("a loop mount needs root")
    image, mnt = tmp_path / "disk.ext4", tmp_path / "mnt"
    mnt.mkdir()
    image.write_bytes(b"")
    os.truncate(image, 128 << 20)
    assert _run("mkfs.ext4", "-q", str(image)).returncode == 0
    mounted = _run("mount", "-o", "loop,errors=remount-ro", str(image), str(mnt))
    if mounted.returncode != 0:  # root without the right to mount (a container without CAP_SYS_ADMIN)
        pytest.skip(f"mount -o loop failed: {mounted.stderr.strip()}")
    try:
        yield image, mnt
    finally:
        _run("umount", str(mnt))


def _device(mnt: Path) -> str:
    return next(Path(line.split()[0]).name for line in Path("/proc/mounts").read_text().splitlines()
                if line.split()[1] == str(mnt))


async def test_a_file_system_turned_read_only_is_named_and_nothing_is_lost(ext4: tuple[Path, Path], nats_url: str,
                                                                          tmp_path: Path) -> None:
    image, mnt = ext4
    db = mnt / "podtax.duckdb"
    async with limited_analyzer(nats_url, tmp_path, db, 1 << 40) as analyzer:
        await publish_logs(nats_url, "a", "ro", N)
        await wait_for(lambda: (h := health(analyzer.port)) and h[1].get("runs") == N, 120, f"the first {N}")
        Path(f"/sys/fs/ext4/{_device(mnt)}/trigger_fs_error").write_text("1")
        await publish_logs(nats_url, "b", "ro", N)
        status, body = await wait_for(lambda: (h := health(analyzer.port)) and h[0] != 200 and h, 60, "the refusal")
    assert status == 503 and "Read-only file system" in body["storage"], body
    assert "its file system is read-only: remount it read-write" in body["storage"], body
    assert "free space" not in body["storage"] and "resumes by itself" not in body["storage"], body
    assert analyzer.proc.returncode == 0
    assert _run("umount", str(mnt)).returncode == 0
    assert _run("e2fsck", "-fy", str(image)).returncode in (0, 1)  # 1: errors corrected
    assert _run("mount", "-o", "loop,errors=remount-ro", str(image), str(mnt)).returncode == 0
    async with limited_analyzer(nats_url, tmp_path, db, 1 << 40) as analyzer:
        await wait_for(lambda: (h := health(analyzer.port)) and h[0] == 200 and h[1].get("runs") == 2 * N, 120,
                       f"all {2 * N} results after the disk is mounted again")
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone() == (2 * N, 2 * N)
    con.close()
