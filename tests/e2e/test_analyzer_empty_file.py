"""A DuckDB file the analyzer could not create (audit hG): a first start on a full disk, or under a file size limit
(ulimit -f), failed as DuckDB created the file and left it empty (0 bytes). The analyzer said to free space (or
'File too large: fix it'); once that was done every later start was refused, 'IO Error: The file ... exists, but it
is not a valid DuckDB database file!: fix it', though the file holds nothing and PODTAX_ANALYZER_DB takes an empty
file as a new one. Now an empty file with no WAL beside it starts a new database (it holds nothing to lose); one
beside a WAL is refused with what to do; a file size limit, a read-only file system and a refused operation are
named with their fix."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
from podtax import natsserver
from podtax.config import is_duckdb_file
from podtax_analyzer.service import open_problem

SAID = "podtax-analyzer: PODTAX_ANALYZER_DB: cannot open {db}: "


def analyzer(db: Path, nats_url: str, port: int, fsize: int | None = None) -> subprocess.Popen[str]:
    """podtax-analyzer on `db`, under a file size limit of `fsize` bytes if given (Python ignores SIGXFSZ:
    a write beyond it fails with EFBIG, as DuckDB then says)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}, "PODTAX_NATS_URL": nats_url,
           "PODTAX_ANALYZER_DB": str(db), "PODTAX_ANALYZER_PORT": str(port)}
    limit = None if fsize is None else (lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize)))
    return subprocess.Popen([sys.executable, "-m", "podtax_analyzer"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=limit)  # noqa: PLW1509 - the limit only


def refusal(proc: subprocess.Popen[str]) -> str:
    """The last line of an analyzer that exits 2 without a traceback."""
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "Traceback" not in err, err
    return err.strip().splitlines()[-1]


def serves(proc: subprocess.Popen[str], port: int) -> bool:
    """Whether the analyzer answers on its API (polled until it does or exits; 60 s at most)."""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
            return True
        except httpx.HTTPError:
            time.sleep(0.1)
    return False


def stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.terminate()
    return proc.communicate(timeout=60)[1]


def serves_once(db: Path, nats_url: str) -> tuple[bool, str]:
    """Start the analyzer on `db`: whether it served its API, and what it logged until stopped."""
    port = natsserver.free_port()
    proc = analyzer(db, nats_url, port)
    try:
        served = serves(proc, port)
    finally:
        err = stop(proc)
    return served, err


def test_a_file_a_failed_first_start_left_empty_does_not_block_the_next(tmp_path: Path, nats_url: str) -> None:
    db = tmp_path / "data" / "podtax.duckdb"
    last = refusal(analyzer(db, nats_url, natsserver.free_port(), fsize=0))
    assert last.startswith(SAID.format(db=db) + "a file size limit stops its writes (File too large): raise it "
                           "(ulimit -f; LimitFSIZE= of its systemd unit)"), last
    assert db.stat().st_size == 0  # what DuckDB leaves (as on a full disk)
    served, err = serves_once(db, nats_url)
    assert served, err  # refused before: 'exists, but it is not a valid DuckDB database file'
    assert is_duckdb_file(db), err
    assert "is empty (0 bytes, no WAL beside it)" in err, err


def test_an_empty_file_beside_a_wal_is_left_as_it_is(tmp_path: Path, nats_url: str) -> None:
    db = tmp_path / "podtax.duckdb"
    db.touch()
    wal = Path(f"{db}.wal")
    wal.write_bytes(b"\x01" * 4096)  # not ours to judge: its database may be elsewhere (a backup)
    last = refusal(analyzer(db, nats_url, natsserver.free_port()))
    assert last.startswith(SAID.format(db=db) + f"the file is empty (0 bytes) but {wal} beside it is not: restore "
                           "the file from a backup, or move both away for a new one"), last
    assert db.stat().st_size == 0 and wal.read_bytes() == b"\x01" * 4096


def test_a_read_only_file_system_and_a_refused_write_are_named_with_their_fix(tmp_path: Path) -> None:
    """DuckDB's own words (seen on a tmpfs remounted read-only and a file under chattr +i, as root): 'fix it'."""
    db = tmp_path / "podtax.duckdb"
    for text, why in [
        (f'IO Error: Cannot open file "{db}": Read-only file system', "its file system is read-only: remount it "
         "read-write (if the kernel turned it read-only after a disk error, check the disk first: dmesg)"),
        (f"[Errno 30] Read-only file system: '{db.parent}'", "its file system is read-only: remount it "),
        (f'IO Error: Cannot open file "{db}": Operation not permitted', "the system refuses to write it (an "
         "immutable file, lsattr shows 'i': chattr -i; or a security policy such as SELinux or AppArmor)"),
    ]:
        line = open_problem(duckdb.IOException(text), db)
        assert line.startswith(f"PODTAX_ANALYZER_DB: cannot open {db}: {why}"), line
        assert "fix it" not in line, line


def test_up_on_a_file_that_is_not_duckdb_says_what_to_do_and_leaves_it(tmp_path: Path) -> None:
    """Another program's file where `podtax up` keeps its database: the refusal said 'name a new file or an analyzer's
    database', a setting `podtax up` does not take (audit hG); now it says to move it away or use another
    --data-dir, and the file is left as it was."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "podtax.duckdb").write_bytes(b"not a database\n" * 100)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    done = subprocess.run([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(data), "--api-port",
                           str(natsserver.free_port()), "--no-kubesim", "--node", "n1"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert f"{data / 'podtax.duckdb'} is not a DuckDB database file (left as it is): move it away, or name a new " \
           "file or an analyzer's database (podtax up: another --data-dir)" in line, line
    assert (data / "podtax.duckdb").read_bytes() == b"not a database\n" * 100
