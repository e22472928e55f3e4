"""`podtax import` (issue 12, items 4 and 10): files resolve inside the manifest's folder (or --root),
regular files only, the size cap measured on what is read; with NATS gone mid-way the command stops
at its deadline and says how far it got."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from podtax import natsserver
from podtax.bus import Bus
from podtax.cli import importer
from podtax.cli.main import main
from podtax.safefiles import UnsafePath, read_capped, resolve_inside

from tests.integration.harness import stream_messages

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
LOG = CORPUS / "debian12-x86_64/sysbench-cpu-prime100000-1t.log"
HEADER = "file,node,env,test,params,started_at,tool_version\n"
PARAMS = "threads=1 max_prime=100000 events=200 time=0"


def row(file: str, i: int = 0) -> str:
    return f"{file},node-{i},host,sysbench-cpu,{PARAMS},2024-03-01T10:00:00Z,\n"


def manifest_with(folder: Path, files: list[str]) -> Path:
    manifest = folder / "manifest.csv"
    manifest.write_text(HEADER + "".join(row(f, i) for i, f in enumerate(files)))
    return manifest


def test_paths_out_of_the_folder_devices_and_proc_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:1")  # nothing may be published anyway
    folder = tmp_path / "logs" / "legacy"
    folder.mkdir(parents=True)
    shutil.copyfile(LOG, folder / "good.log")
    (folder / "out.log").symlink_to("/etc/passwd")
    (folder / "env.log").symlink_to("/proc/self/environ")
    (folder / "sub").symlink_to(tmp_path)  # a directory link leading out
    shutil.copyfile(LOG, tmp_path / "secret.log")
    os.mkfifo(folder / "pipe.log")
    bad = ["../../etc/passwd", "/etc/passwd", "out.log", "env.log", "/proc/self/environ", "sub/secret.log",
           "pipe.log", "../legacy/../../secret.log"]
    manifest = manifest_with(folder, ["good.log", *bad])
    assert main(["import", str(manifest), "--campaign", "doors", "--dry-run"]) == 2
    err = capsys.readouterr().err
    for i, name in enumerate(bad, start=3):
        assert f"line {i}: file {name}" in err, name
    assert "line 2:" not in err  # the good row is fine
    assert err.count("outside") == 5 and err.count("absolute path") == 2 and "not a regular file" in err
    assert "nothing was imported" in err


def test_root_widens_the_folder_explicitly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "manifests").mkdir()
    (tmp_path / "logs").mkdir()
    shutil.copyfile(LOG, tmp_path / "logs" / "a.log")
    manifest = manifest_with(tmp_path / "manifests", ["../logs/a.log"])
    assert main(["import", str(manifest), "--campaign", "rooted", "--dry-run"]) == 2
    assert main(["import", str(manifest), "--campaign", "rooted", "--dry-run", "--root", str(tmp_path)]) == 0
    assert "1 row(s) are valid" in capsys.readouterr().out
    assert main(["import", str(manifest), "--campaign", "rooted", "--root", str(tmp_path / "nope")]) == 2


def test_the_size_cap_is_measured_on_what_is_read(tmp_path: Path) -> None:
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0  # what the file system claims
    with pytest.raises(UnsafePath, match="more than 10 bytes"):
        read_capped(status, 10)
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * 101)
    with pytest.raises(UnsafePath, match="more than 100 bytes"):
        read_capped(big, 100)
    assert read_capped(big, 101) == b"x" * 101
    with pytest.raises(UnsafePath, match="not found"):
        resolve_inside(tmp_path, "missing.log")


def test_a_log_swapped_for_a_link_after_the_check_is_refused_at_reading(tmp_path: Path) -> None:
    shutil.copyfile(LOG, tmp_path / "a.log")
    rows = importer.read_manifest(manifest_with(tmp_path, ["a.log"]))
    (tmp_path / "a.log").unlink()
    (tmp_path / "a.log").symlink_to("/etc/passwd")
    with pytest.raises(importer.ManifestError, match="line 2: file a.log"):
        importer.build_event(rows[0], "swap", 0)


async def test_nats_dying_mid_import_stops_at_the_deadline_with_the_count(
        nats_server: natsserver.NatsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    monkeypatch.setattr(importer, "CHUNK", 50)
    names = [f"log-{i}.log" for i in range(120)]
    for name in names:
        shutil.copyfile(LOG, tmp_path / name)
    manifest = manifest_with(tmp_path, names)
    real_build = importer.build_event
    built = 0

    def build_then_kill(row: importer.Row, campaign: str, sequence: int, *args):  # noqa: ANN002, ANN202
        """Fault injection: the server dies once the first chunk of 50 is acked (the check before
        publishing builds no event for logs this small)."""
        nonlocal built
        built += 1
        if built == 50 + 1:
            nats_server.proc.kill()
            nats_server.proc.wait()
        return real_build(row, campaign, sequence, *args)

    monkeypatch.setattr(importer, "build_event", build_then_kill)
    code = await asyncio.wait_for(asyncio.to_thread(main, ["import", str(manifest), "--campaign", "dead"]), 60)
    assert code == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "stopped part-way: 50 of 120 published" in err
    assert "did not answer within 2 s" in err


def test_nats_down_from_the_start_fails_within_the_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", f"nats://127.0.0.1:{natsserver.free_port()}")
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    shutil.copyfile(LOG, tmp_path / "a.log")
    assert main(["import", str(manifest_with(tmp_path, ["a.log"])), "--campaign", "down"]) == 1
    assert "nothing was imported" in capsys.readouterr().err


def test_a_bad_deadline_setting_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "soon")
    shutil.copyfile(LOG, tmp_path / "a.log")
    assert main(["import", str(manifest_with(tmp_path, ["a.log"])), "--campaign", "x"]) == 2
    err = capsys.readouterr().err
    assert "PODTAX_CLI_TIMEOUT='soon' is not a number" in err and "Traceback" not in err



async def _streams(url: str) -> None:
    bus = await Bus.connect(url, "test")
    await bus.ensure_streams()
    await bus.close()


# A log under the 1 MB cap whose event is not: each control character is 6 bytes of JSON (\u0001).
ESCAPED = b"\x01" * 400_000


async def test_one_oversized_log_is_refused_before_anything_is_published(
        nats_server: natsserver.NatsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    await _streams(nats_server.url)
    for name in ("a.log", "c.log"):
        shutil.copyfile(LOG, tmp_path / name)
    (tmp_path / "big.log").write_bytes(ESCAPED)
    manifest = manifest_with(tmp_path, ["a.log", "big.log", "c.log"])
    code = await asyncio.to_thread(main, ["import", str(manifest), "--campaign", "big"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    assert "line 3: big.log does not fit one NATS message" in err and "nothing was imported" in err
    assert "line 2" not in err and "line 4" not in err and "Traceback" not in err
    assert await stream_messages(nats_server.url) == 0


async def test_a_log_grown_past_the_limit_after_the_check_stops_with_the_line_and_count(
        nats_server: natsserver.NatsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    monkeypatch.setattr(importer, "CHUNK", 1)
    await _streams(nats_server.url)
    for name in ("a.log", "b.log"):
        shutil.copyfile(LOG, tmp_path / name)
    manifest = manifest_with(tmp_path, ["a.log", "b.log"])
    real_build = importer.build_event

    def grow_then_build(row: importer.Row, campaign: str, sequence: int, *args):  # noqa: ANN002, ANN202
        if row.file == "b.log":  # checked while small; grown once a.log is published
            (tmp_path / "b.log").write_bytes(ESCAPED)
        return real_build(row, campaign, sequence, *args)

    monkeypatch.setattr(importer, "build_event", grow_then_build)
    code = await asyncio.to_thread(main, ["import", str(manifest), "--campaign", "grown"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    assert "line 3: b.log does not fit one NATS message" in err and "stopped part-way: 1 of 2 published" in err
    assert "Traceback" not in err and "nothing was imported" not in err
    assert await stream_messages(nats_server.url) == 1
