"""`podtax import MANIFEST --campaign NAME`: real corpus logs -> raw-log events -> parser -> DuckDB;
a bad manifest publishes nothing; importing twice adds nothing."""

from __future__ import annotations

import asyncio
import shutil
from datetime import UTC, datetime
from pathlib import Path

import nats
import pytest
from podtax import subjects
from podtax.bus import Bus
from podtax.cli import importer
from podtax.cli.main import main

from tests.integration.harness import services, stream_messages, wait_for

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
HEADER = "file,node,env,test,params,started_at,tool_version\n"
LOGS = {  # name in the manifest folder -> corpus file
    "cpu-1t.log": "debian12-x86_64/sysbench-cpu-prime100000-1t.log",
    "cpu-2t.log": "debian12-x86_64/sysbench-cpu-prime100000-2t.log",
    "opi-cpu-1t.log": "sysbench/sbc-orange-pi-zero2/sysbench-cpu-1-thread",
    "stress.log": "debian12-x86_64/stress-ng-cpu-1-ops3000-brief.log",
    "hdparm.txt": "hdparm/tinkerboard/hdparm.txt",
}
GOOD_ROWS = (
    "cpu-1t.log,node-1.lab,host,sysbench-cpu,threads=1 max_prime=100000 events=200 time=0,2024-03-01T10:00:00,\n"
    "cpu-2t.log,node-1.lab,kubernetes,sysbench-cpu,threads=2 max_prime=100000 events=400 time=0,"
    "2024-03-01T10:05:00+01:00,\n"
    "opi-cpu-1t.log,opi,host,sysbench-cpu,threads=1,2024-03-02T08:00:00Z,\n"
    "stress.log,node-1.lab,host,stress-ng-cpu,threads=1 ops=3000,2024-03-01T11:00:00Z,"
    "\"stress-ng, version 0.15.06 (gcc 12.2.0, x86_64 Linux 6.1.0-18-amd64)\"\n"
    "hdparm.txt,tinker,host,hdparm,mode=disk device=/dev/sda1,2024-03-03T09:00:00Z,hdparm v9.65\n"
)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "legacy"
    folder.mkdir()
    for name, source in LOGS.items():
        shutil.copyfile(CORPUS / source, folder / name)
    return folder


async def _cli(*args: str) -> int:
    return await asyncio.to_thread(main, ["import", *args])


async def _raw_logs(url: str) -> int:
    """Raw-log events in the stream (the analyzer's score events come and go on their own schedule)."""
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().stream_info(subjects.STREAM, subjects_filter=f"{subjects.RUN_LOG}.>")
        return sum((info.state.subjects or {}).values())
    finally:
        await nc.close()



async def test_import_lands_in_duckdb_and_twice_adds_nothing(nats_url: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    manifest = _folder(tmp_path) / "manifest.csv"
    manifest.write_text(HEADER + GOOD_ROWS)
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        assert await _cli(str(manifest), "--campaign", "legacy") == 0
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE campaign='legacy' AND status IS NOT NULL")
                       [0][0] == 5, 30, "five imported runs")
        runs = s.query("SELECT node, env, test, status, tool FROM runs ORDER BY node, env, test")
        assert runs == [("node-1.lab", "host", "stress-ng-cpu", "ok", "stress-ng"),
                        ("node-1.lab", "host", "sysbench-cpu", "ok", "sysbench"),
                        ("node-1.lab", "kubernetes", "sysbench-cpu", "ok", "sysbench"),
                        ("opi", "host", "sysbench-cpu", "ok", "sysbench"),
                        ("tinker", "host", "hdparm", "ok", "hdparm")]
        raws = s.query("SELECT imported_from, exit_code, started_at, stderr FROM raw_logs ORDER BY imported_from")
        assert [r[0] for r in raws] == sorted(LOGS)
        assert all(r[1] == 0 and r[3] == "" for r in raws)
        started = {r[0]: r[2] for r in raws}
        assert started["cpu-1t.log"].replace(tzinfo=started["cpu-1t.log"].tzinfo or UTC) == \
            datetime(2024, 3, 1, 10, 0, tzinfo=UTC)  # no timezone in the manifest: UTC
        metrics = dict(s.query("SELECT m.name, m.value FROM metrics m JOIN raw_logs l USING (run_id) "
                               "WHERE l.imported_from = 'stress.log'"))
        assert metrics["bogo_ops"] == 3000
        tool_version = s.query("SELECT r.tool_version FROM runs r JOIN raw_logs l USING (run_id) "
                               "WHERE l.imported_from = 'stress.log'")[0][0]
        assert tool_version == "0.15.06"
        stored = await _raw_logs(nats_url)
        assert stored == 5

        assert await _cli(str(manifest), "--campaign", "legacy") == 0  # again: nothing new
        await asyncio.sleep(1.5)
        assert await _raw_logs(nats_url) == stored  # JetStream dropped the repeated event ids
        assert s.query("SELECT count(*) FROM runs")[0][0] == 5
        assert s.query("SELECT count(*) FROM raw_logs")[0][0] == 5


async def test_bad_manifest_names_every_bad_line_and_publishes_nothing(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    await bus.close()
    manifest = _folder(tmp_path) / "manifest.csv"
    manifest.write_text(HEADER
                        + "cpu-1t.log,node-1,host,sysbench-cpu,threads=1 max_prime=100000,2024-03-01T10:00:00Z,\n"
                        + "cpu-2t.log,node-1,host,sysbench-cpu,threads=2 max_prime=nope,2024-03-01T10:05:00Z,\n"
                        + "stress.log,node-1,host,stress-ng-cpu,threads=1,2024-03-01T11:00:00Z,\n"
                        + "gone.log,node-1,host,sysbench-cpu,threads=1,2024-03-01T12:00:00Z,\n")
    capsys.readouterr()
    assert await _cli(str(manifest), "--campaign", "legacy") == 2
    out = capsys.readouterr().err
    assert "line 3:" in out and "max_prime" in out
    assert "line 5:" in out and "gone.log not found" in out
    assert "line 2:" not in out and "line 4:" not in out
    assert "nothing was imported" in out
    assert await stream_messages(nats_url) == 0

    assert await _cli(str(manifest.with_name("cpu-1t.log")), "--campaign", "legacy") == 2  # not a CSV header
    assert "line 1: the header must be" in capsys.readouterr().err
    assert await stream_messages(nats_url) == 0


async def test_dry_run_publishes_nothing(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    bus = await Bus.connect(nats_url, "test")
    await bus.ensure_streams()
    await bus.close()
    manifest = _folder(tmp_path) / "manifest.csv"
    manifest.write_text(HEADER + GOOD_ROWS)
    assert await _cli(str(manifest), "--campaign", "legacy", "--dry-run") == 0
    assert await stream_messages(nats_url) == 0


def test_every_kind_of_bad_row_is_reported(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    manifest = folder / "manifest.csv"
    (folder / "huge.log").write_bytes(b"x" * (importer.MAX_LOG_BYTES + 1))
    manifest.write_text(HEADER
                        + "cpu-1t.log,n1,host,sysbench-cpu,threads=1,2024-03-01T10:00:00,\n"      # 2 ok
                        + "cpu-1t.log,n1,pod,sysbench-cpu,threads=1,2024-03-01T10:00:00,\n"       # 3 env
                        + "cpu-1t.log,n1,host,sysbench-gpu,threads=1,2024-03-01T10:00:00,\n"      # 4 test
                        + "cpu-1t.log,n1,host,sysbench-cpu,threads=1,yesterday,\n"                # 5 date
                        + "cpu-1t.log,n1,host,sysbench-cpu,threads=1,2024-03-01T11:00:00,\n"      # 6 duplicate
                        + "huge.log,n1,host,sysbench-cpu,threads=1,2024-03-01T10:00:00,\n"        # 7 size
                        + "cpu-2t.log,n1,host,sysbench-cpu,threads,2024-03-01T10:00:00,\n"        # 8 params
                        + "cpu-2t.log,n1,host,sysbench-cpu,threads=all,2024-03-01T10:00:00,\n")   # 9 threads=all
    with pytest.raises(importer.ManifestError) as info:
        importer.read_manifest(manifest)
    problems = info.value.problems
    assert [p.split(":", 1)[0] for p in problems] == [f"line {n}" for n in range(3, 10)]
    assert "must be host or kubernetes" in problems[0]
    assert "unknown test 'sysbench-gpu'" in problems[1]
    assert "ISO 8601" in problems[2]
    assert "duplicate of line 2" in problems[3]
    assert "output cap" in problems[4]
    assert "key=value" in problems[5]
    assert "threads=all" in problems[6]


def test_run_ids_are_deterministic_and_naive_times_are_utc(tmp_path: Path) -> None:
    manifest = _folder(tmp_path) / "manifest.csv"
    manifest.write_text(HEADER + GOOD_ROWS)
    rows = importer.read_manifest(manifest)
    first = [importer.build_event(r, "legacy", i) for i, r in enumerate(rows)]
    again = [importer.build_event(r, "legacy", i) for i, r in enumerate(importer.read_manifest(manifest))]
    assert [e.id for e in first] == [e.id for e in again]
    assert all(e.id == f"{e.data.run.run_id}.log" for e in first)
    assert len({e.data.run.run_id for e in first}) == 5
    assert importer.build_event(rows[0], "other", 0).data.run.run_id != first[0].data.run.run_id
    assert rows[0].started_at == datetime(2024, 3, 1, 10, 0, tzinfo=UTC)
    assert first[0].data.imported_from == "cpu-1t.log"


@pytest.mark.parametrize("line,seconds", [
    (0, 1.0916),   # sysbench's own "total time"
    (2, 10.0008),
    (3, 1.69),     # stress-ng's real time
    (4, 0.0),      # hdparm reports no duration and has no time parameter: ends at its start
])
def test_imported_runs_end_when_the_log_says(tmp_path: Path, line: int, seconds: float) -> None:
    manifest = _folder(tmp_path) / "manifest.csv"
    manifest.write_text(HEADER + GOOD_ROWS)
    log = importer.build_event(importer.read_manifest(manifest)[line], "legacy", line).data
    assert (log.ended_at - log.started_at).total_seconds() == pytest.approx(seconds)


def test_imported_run_without_a_duration_in_its_log_uses_the_requested_time() -> None:
    assert importer.run_seconds("sysbench-cpu", "not a sysbench log", {"time": 30}) == 30.0
    assert importer.run_seconds("sysbench-cpu", "not a sysbench log", {"threads": 1}) is None
