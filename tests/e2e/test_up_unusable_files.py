"""A DuckDB file or a data dir that cannot be used at start (audit): the analyzer gave a DuckDB traceback when
another process held its file (or its disk was full), and `podtax up` said only "the analyzer did not answer",
30 s later; `podtax up` on a full disk gave a traceback at its first write (its lock file). Now the analyzer exits 2
with one line naming PODTAX_ANALYZER_DB, why and what to do; `podtax up` names a child that exits 2 while starting
with the reason it gave, at once (exit 2); and a data dir it cannot write is one line, exit 2."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax import natsserver
from podtax_analyzer.db_file import HEADERS_BYTES, cut_short
from podtax_analyzer.store import Store

CLI = [sys.executable, "-m", "podtax.cli.main"]
HOLD = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(300)"


@pytest.fixture
def held_db(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A DuckDB file another process holds open (DuckDB locks it: one writer process per file)."""
    path = tmp_path / "data" / "podtax.duckdb"
    path.parent.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield path, holder.pid
    finally:
        holder.kill()
        holder.wait()


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}


def analyzer_refusal(db: Path, nats_url: str) -> str:
    """The last line of podtax-analyzer on `db`, once it has exited 2 without a traceback."""
    env = {**clean_env(), "PODTAX_NATS_URL": nats_url, "PODTAX_ANALYZER_DB": str(db),
           "PODTAX_ANALYZER_PORT": str(natsserver.free_port())}
    done = subprocess.run([sys.executable, "-m", "podtax_analyzer"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr.strip().splitlines()[-1]


def up_refusal(data: Path, node: str) -> str:
    """The one error line of podtax up on the data dir `data`, once it has exited 2 without a traceback."""
    done = subprocess.run([*CLI, "up", "--data-dir", str(data), "--api-port", str(natsserver.free_port()),
                           "--no-kubesim", "--node", node], env=clean_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    return line


def test_the_analyzer_names_a_held_file_in_one_line(held_db: tuple[Path, int], nats_url: str) -> None:
    path, holder = held_db
    last = analyzer_refusal(path, nats_url)
    assert last.startswith(f"podtax-analyzer: PODTAX_ANALYZER_DB: cannot open {path}: another process holds it "
                           f"(PID {holder},"), last
    assert "or name another file" in last


def test_up_names_the_reason_a_service_did_not_start(held_db: tuple[Path, int]) -> None:
    path, holder = held_db
    line = up_refusal(path.parent, "held-node")
    assert line.startswith("error: analyzer did not start: podtax-analyzer: PODTAX_ANALYZER_DB: cannot open "
                           f"{path}: another process holds it (PID {holder},"), line
    assert line.endswith(f"(see {path.parent / 'logs' / 'analyzer.log'})"), line


def test_up_on_a_data_dir_it_cannot_write_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "up.lock").symlink_to("/dev/full")  # every write fails, as on a full disk
    done = _up_refused(data)
    assert done.stderr.strip().splitlines() == [
        f"error: --data-dir {data}: cannot write {data / 'up.lock'} (Invalid argument); free space on its disk or "
        "choose another --data-dir"], done.stderr


@pytest.fixture
def damaged_db(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A real analyzer file (800 KB) cut short: after 300 KB DuckDB opens it (its catalog is whole) and fails only
    at the first write, so the analyzer served and `podtax up` said it was up (audit); after 20 KB DuckDB refuses
    to open it, said as any other error ('IO Error: Could not read enough bytes ...: fix it'); so it did with a bad
    block in its catalog ('Corrupt database file: computed checksum ...'), param 0."""
    from tests.e2e.test_up_unhealthy_analyzer import _failure

    path = tmp_path / "data" / "podtax.duckdb"
    store = Store(path)
    store.write_batch([_failure(i) for i in range(2000)])
    store.close()
    assert path.stat().st_size > 600_000
    if (cut := getattr(request, "param", 300_000)) == 0:
        with path.open("r+b") as f:
            f.seek(3 * 4096 + 1000)  # inside the first block, after the file's headers
            f.write(b"\xff" * 64)
    else:
        os.truncate(path, cut)
    return path


@pytest.mark.parametrize(("damaged_db", "why"), [(300_000, "(cut short: 300,000 bytes, fewer than the "),
                                                 (20_000, "(cut short or overwritten): "),
                                                 (0, "(cut short or overwritten): ")], indirect=["damaged_db"],
                         ids=["cut to 300 KB", "cut to 20 KB", "a bad block"])
def test_the_analyzer_names_a_damaged_file_in_one_line(damaged_db: Path, why: str, nats_url: str) -> None:
    last = analyzer_refusal(damaged_db, nats_url)
    said = f"podtax-analyzer: PODTAX_ANALYZER_DB: cannot open {damaged_db}: the file is damaged {why}"
    assert last.startswith(said), last
    assert last.endswith("restore it from a backup, or move it away for a new one, or name another file (podtax up: "
                         "another --data-dir)"), last


def test_up_names_a_file_cut_short(damaged_db: Path) -> None:
    line = up_refusal(damaged_db.parent, "cut-node")  # it said 'podtax is up' (exit 0), the analyzer serving
    assert line.startswith("error: analyzer did not start: podtax-analyzer: PODTAX_ANALYZER_DB: cannot open "
                           f"{damaged_db}: the file is damaged (cut short: 300,000 bytes"), line



PAD = "CREATE TABLE {} AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(20000); CHECKPOINT"
KILLED = "a WAL left by a killed writer"
KILLED_WRITER = ("import duckdb, os, signal, sys; c = duckdb.connect(sys.argv[1]); c.execute(sys.argv[2]); "
                 "c.execute('INSERT INTO a SELECT range, md5(range::VARCHAR) FROM range(20000, 30000)'); "
                 "os.kill(os.getpid(), signal.SIGKILL)")
HEALTHY = {"fresh": [],
           "a table dropped before the last": [PAD.format("a"), PAD.format("b"), "DROP TABLE a; CHECKPOINT"],
           "the last table dropped": [PAD.format("a"), PAD.format("b"), "DROP TABLE b; CHECKPOINT"],
           "most rows deleted": [PAD.format("a"), "DELETE FROM a WHERE i > 100; CHECKPOINT"],
           KILLED: []}


def healthy_db(path: Path, state: str) -> Path:
    """A real analyzer file in a state DuckDB leaves a healthy file in (2.0.1 cuts free blocks off the end itself
    and lowers its total; free blocks before the last one in use stay; a WAL is replayed at the next open)."""
    if state == KILLED:
        subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path), PAD.format("a")], check=False, timeout=60)
        assert Path(f"{path}.wal").stat().st_size > 0
    with contextlib.closing(Store(path)) as store:
        for step in HEALTHY[state]:
            store.con.execute(step)
    return path


@pytest.mark.parametrize("state", HEALTHY)
def test_the_check_passes_every_healthy_file(tmp_path: Path, state: str) -> None:
    path = healthy_db(tmp_path / "podtax.duckdb", state)
    with contextlib.closing(Store(path)) as store:
        assert cut_short(store.con, path) is None
        for (table,) in store.con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
            store.con.execute(f'SELECT * FROM "{table}"').fetchall()  # every block in use reads


def test_the_analyzer_names_a_file_cut_short_after_free_blocks(tmp_path: Path, nats_url: str) -> None:
    """Cut after as many blocks as are in use but before its last block: the check on blocks in use let it through,
    the analyzer served, and the first read failed ('Could not read enough bytes ... from location ...')."""
    path = healthy_db(tmp_path / "podtax.duckdb", "a table dropped before the last")
    with contextlib.closing(Store(path)) as store:
        _, _, block_size, total, used, *_ = store.con.execute("PRAGMA database_size").fetchone()
    assert used < total  # free blocks before the last one in use
    os.truncate(path, cut := HEADERS_BYTES + used * block_size)
    last = analyzer_refusal(path, nats_url)
    assert last.startswith(f"podtax-analyzer: PODTAX_ANALYZER_DB: cannot open {path}: the file is damaged (cut short: "
                           f"{cut:,} bytes, fewer than the {HEADERS_BYTES + total * block_size:,} its blocks in use "
                           "need): "), last


def test_an_unreachable_nats_url_is_said_at_once(tmp_path: Path) -> None:
    """PODTAX_NATS_URL naming a server that is not running: every service exits 3 ('cannot reach NATS'), and
    `podtax up` said only 'the analyzer did not answer on ...; see analyzer.log', 30 s later (audit hD). Now it
    says what the analyzer said (the message of its JSON log line), exit 1."""
    url = f"nats://127.0.0.1:{natsserver.free_port()}"  # nothing listens there
    done = subprocess.run([*CLI, "up", "--data-dir", str(tmp_path / "data"), "--api-port",
                           str(natsserver.free_port()), "--no-kubesim", "--node", "n1"],
                          env={**clean_env(), "PODTAX_NATS_URL": url}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "analyzer exited with 3" in errors[0] and f"cannot reach NATS at {url}" in errors[0], errors
    assert '"msg"' not in errors[0]


@pytest.mark.parametrize(("setting", "value", "says"), [
    ("PODTAX_ANALYZER_PORT", "{nats_port}", "PODTAX_ANALYZER_PORT: cannot listen on 127.0.0.1:{nats_port} ("),
    ("PODTAX_ANALYZER_HOST", "192.0.2.1", "PODTAX_ANALYZER_HOST: cannot listen on 192.0.2.1:"),  # not this host's
])
def test_the_analyzer_names_an_api_address_it_cannot_listen_on(tmp_path: Path, nats_url: str, setting: str,
                                                              value: str, says: str) -> None:
    """The analyzer run alone (its README's way) with its API port in use or an address not of this host: uvicorn
    logged 'ERROR: [Errno 98] ...' after the service had said 'analyzer API on ...', and it exited 3, NATS's status,
    naming no setting (audit hD). Now one line naming the setting, exit 2."""
    nats_port = nats_url.rsplit(":", 1)[1]
    env = {**clean_env(), "PODTAX_NATS_URL": nats_url, "PODTAX_ANALYZER_DB": str(tmp_path / "podtax.duckdb"),
           "PODTAX_ANALYZER_PORT": str(natsserver.free_port()), setting: value.format(nats_port=nats_port)}
    done = subprocess.run([sys.executable, "-m", "podtax_analyzer"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert says.format(nats_port=nats_port) in last and "Traceback" not in done.stderr, done.stderr
    assert "analyzer API on" not in done.stderr, done.stderr


@pytest.mark.parametrize("secret", ["api-token", "nats-users.json", "nats-auth.conf"])
def test_a_secret_file_that_is_a_folder_is_one_line_and_no_nats_server_is_left(tmp_path: Path, secret: str) -> None:
    """A folder where `up` keeps a secret (restored from a backup, made by hand) gave a 20-line IsADirectoryError
    traceback, and a stray `.<name>.<pid>.tmp` copy of the secret beside it."""
    data = tmp_path / "data"
    (data / secret).mkdir(parents=True)
    done = _up_refused(data)
    assert done.stderr.strip().splitlines() == [
        f"error: --data-dir {data}: cannot use {data / secret} (Is a directory); remove it, or make it a file podtax "
        "can read and write"], done.stderr
    assert not [p.name for p in data.iterdir() if p.name.endswith(".tmp")], "no stray copy of a secret"
    store = str(data / "jetstream").encode()
    left = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and store in _cmdline(p)]
    assert left == [], f"a nats-server on this data dir was left running: pids {left}"


def _cmdline(proc: Path) -> bytes:
    """A process's command line ('' once it has gone)."""
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def _up_refused(data: Path) -> subprocess.CompletedProcess[str]:
    """`podtax up` on `data` (no kubesim), expected to refuse at once: exit 2."""
    done = subprocess.run([*CLI, "up", "--data-dir", str(data), "--api-port", str(natsserver.free_port()),
                           "--no-kubesim"], env=clean_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    return done
