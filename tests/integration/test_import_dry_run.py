"""`podtax import --dry-run`: every check the import makes before publishing, without NATS. Each log is
read and parsed: logs the parser would reject are listed by line (they import as failed runs, exit 0);
an event too big for nats-server's default max_payload, or a log gone since, stops it (exit 2). A log
that prints another version than the row's tool_version is named (VERSION_MISMATCH), as is one whose
run the parser flags for other or less work than its row's params (THREADS_MISMATCH, PARAM_MISMATCH,
SHORT). The real import warns of the same logs."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from podtax.cli import importer
from podtax.cli.main import main

from tests.integration.harness import stream_messages

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
LOG = CORPUS / "debian12-x86_64/sysbench-cpu-prime100000-1t.log"
HEADER = "file,node,env,test,params,started_at,tool_version\n"
PARAMS = "threads=1 max_prime=100000 events=200 time=0"


def _manifest(folder: Path, files: list[str]) -> Path:
    manifest = folder / "manifest.csv"
    manifest.write_text(HEADER + "".join(f"{f},node-{i},host,sysbench-cpu,{PARAMS},2024-03-01T10:00:00Z,\n"
                                         for i, f in enumerate(files)))
    return manifest


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:1")  # no server: a dry run must not need one
    shutil.copyfile(LOG, tmp_path / "good.log")
    text = LOG.read_text()
    (tmp_path / "cut.log").write_text(text[:text.index("General statistics")])  # killed before its figures
    (tmp_path / "stress.log").write_text((CORPUS / "debian12-x86_64/stress-ng-cpu-1-ops3000-brief.log").read_text())
    return tmp_path


def test_a_dry_run_parses_every_log_and_lists_the_rejected(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _manifest(folder, ["good.log", "cut.log", "stress.log"])
    assert main(["import", str(manifest), "--campaign", "old", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "3 row(s) are valid, 1 log(s) parse" in out
    assert "line 3: cut.log: truncated:" in err  # the cut log, by its manifest line and the parser's reason
    assert "line 4: stress.log: wrong-tool:" in err  # a stress-ng log listed as sysbench-cpu
    assert "2 of 3 log(s) yield no figures" in err


def test_a_clean_dry_run_warns_of_nothing(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(_manifest(folder, ["good.log"])), "--campaign", "old", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "1 row(s) are valid, 1 log(s) parse" in out
    assert "warning" not in err


@pytest.mark.parametrize(("tool_version", "named"), [
    ("sysbench 1.0.18", "the log prints sysbench 1.0.20, the manifest's tool_version is 'sysbench 1.0.18'"),
    ("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)", None),  # the same version
    ("", None),  # no tool_version: the log's own version is used, nothing to compare
], ids=["other-version", "same-version", "none"])
def test_a_dry_run_names_a_version_mismatch(folder: Path, tool_version: str, named: str | None,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The log prints sysbench 1.0.20; a manifest saying another version gets the run flagged VERSION_MISMATCH
    by the parser service, so the dry run names the row, both versions and the count."""
    manifest = folder / "manifest.csv"
    manifest.write_text(HEADER + f"good.log,node-1,host,sysbench-cpu,{PARAMS},2024-03-01T10:00:00Z,{tool_version}\n"
                        f"good.log,node-2,host,sysbench-cpu,{PARAMS},2024-03-01T10:00:00Z,\n")
    assert main(["import", str(manifest), "--campaign", "old", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "2 row(s) are valid, 2 log(s) parse" in out
    if named is None:
        assert "VERSION_MISMATCH" not in err and "warning" not in err
    else:
        assert f"line 2: good.log: VERSION_MISMATCH: {named}" in err
        assert "line 3" not in err  # the row without a tool_version is not named
        assert "1 of 2 log(s) print another tool version than the manifest's tool_version" in err


@pytest.mark.parametrize(("params", "named"), [
    ("threads=2 max_prime=100000 events=200 time=0", "THREADS_MISMATCH: the tool ran 1 threads, 2 were requested"),
    ("threads=1 max_prime=100000 events=100 time=0",
     "PARAM_MISMATCH: events: sysbench ran 200 events, more than the 100 requested"),
    ("threads=1 max_prime=100000 events=400 time=0",
     "SHORT: sysbench ran 200 of the 400 requested events before it stopped"),
    ("threads=2 max_prime=20000 events=200 time=0", "THREADS_MISMATCH: the tool ran 1 threads, 2 were requested; "
                                                    "PARAM_MISMATCH: max_prime echoed as 100000, requested 20000"),
    (PARAMS, None),  # what the log ran
], ids=["threads", "more-events", "short", "two-flags", "none"])
def test_a_dry_run_names_the_flags_a_run_will_get(folder: Path, params: str, named: str | None,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The log ran 1 thread, 200 events at a prime limit of 100000; a row saying otherwise gets its run flagged
    by the parser service (its cell PARAMS_MISMATCH or SHORT), so the dry run names the row and its flags,
    and still passes (exit 0)."""
    manifest = folder / "manifest.csv"
    manifest.write_text(HEADER + f"good.log,node-1,host,sysbench-cpu,{params},2024-03-01T10:00:00Z,\n"
                        f"good.log,node-2,host,sysbench-cpu,{PARAMS},2024-03-01T10:00:00Z,\n")
    assert main(["import", str(manifest), "--campaign", "old", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "2 row(s) are valid, 2 log(s) parse" in out
    if named is None:
        assert "warning" not in err
    else:
        assert f"line 2: good.log: {named}\n" in err
        assert "line 3" not in err  # the row that matches its log is not named
        assert "1 of 2 log(s) did other or less work than their row's params ask" in err


def test_a_dry_run_refuses_an_event_too_big_for_nats(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # under the 1 MB file cap, but 6 bytes of JSON per control character: over 1 MiB encoded
    (folder / "controls.log").write_bytes(b"\x01" * 200_000)
    assert main(["import", str(_manifest(folder, ["good.log", "controls.log"])), "--campaign", "old",
                 "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "line 3: controls.log does not fit one NATS message" in err
    assert f"{importer.NATS_DEFAULT_MAX_PAYLOAD:,}" in err
    assert "nothing was imported" in err


@pytest.mark.parametrize("end", ["\r\n", "\r", "\n"], ids=["crlf", "cr", "lf"])
def test_line_ends_of_any_platform_read_the_same(folder: Path, end: str, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [f"{f},node-{i},host,sysbench-cpu,{PARAMS},2024-03-01T10:00:00Z,"
            for i, f in enumerate(["good.log", "cut.log"])]
    manifest = folder / "manifest.csv"
    manifest.write_bytes(end.join([HEADER.strip(), *rows, ""]).encode())
    assert main(["import", str(manifest), "--campaign", "old", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "2 row(s) are valid, 1 log(s) parse" in out
    assert "line 3: cut.log: truncated" in err  # line numbers count the same whatever the line end


async def test_an_import_publishes_a_rejected_log_and_says_so(folder: Path, nats_url: str,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The real import (a real nats-server): a log the parser will reject is still published (the analyzer
    records it as a failed run) and the command names it, as the dry run does."""
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    manifest = _manifest(folder, ["good.log", "cut.log"])
    manifest.write_text(manifest.read_text().replace("Z,\n", "Z,sysbench 1.0.18\n", 1))  # good.log prints 1.0.20
    manifest.write_text(manifest.read_text().replace("threads=1", "threads=2", 1))  # good.log ran 1 thread
    assert await asyncio.to_thread(main, ["import", str(manifest), "--campaign", "old"]) == 0
    out, err = capsys.readouterr()
    assert "published 2 log(s)" in out
    assert "line 3: cut.log: truncated:" in err
    assert "1 of 2 log(s) yield no figures" in err
    assert "line 2: good.log: VERSION_MISMATCH: the log prints sysbench 1.0.20" in err
    assert "line 2: good.log: THREADS_MISMATCH: the tool ran 1 threads, 2 were requested" in err
    assert await stream_messages(nats_url) == 2


def test_the_example_manifest_of_the_readme_imports_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    repo = Path(__file__).resolve().parents[2]
    manifest = repo / "examples" / "import" / "manifest.csv"
    assert main(["import", str(manifest), "--campaign", "old", "--root", str(repo), "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "4 row(s) are valid, 4 log(s) parse" in out
    # its two sysbench rows ran 1 and 2 threads on purpose (the README says so): that warning and no other
    assert [w.split(":")[0] for w in err.split("warning: ")[1:]] == ["sysbench-cpu on node-1.lab"], err
    assert "different cells" in err and "CONFOUNDED" not in err
    assert "--root . --dry-run" in (repo / "README.md").read_text()  # the command the README gives


def test_a_dry_run_names_a_fio_log_of_rounded_runtime(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fio's ROUNDED_RUNTIME (a job direction timed 20 ms or less: its IOPS and bandwidth a floor) is named with how
    its cells are flagged; a log of the template's time_based run is not (real captures, tests/corpus-found)."""
    found = CORPUS.parent / "corpus-found"
    for name in ("fio-3.33-template-1m-5ms.json", "fio-3.33-template-1m-time-based.json"):
        shutil.copy(found / name, tmp_path / name)
    params = "rw=randread bs=4K size=1M iodepth=16 direct=1 runtime=1"
    (tmp_path / "manifest.csv").write_text(
        HEADER + f"fio-3.33-template-1m-5ms.json,node-1,host,fio,{params},2024-03-01T10:00:00Z,\n"
        f"fio-3.33-template-1m-time-based.json,node-2,host,fio,{params},2024-03-01T10:00:00Z,\n")
    assert main(["import", str(tmp_path / "manifest.csv"), "--campaign", "old", "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "line 2: fio-3.33-template-1m-5ms.json: ROUNDED_RUNTIME: fio timed podtax read as 5 ms" in err, err
    assert "1 of 2 log(s) timed a fio job direction in 20 ms or less (ROUNDED_RUNTIME)" in err, err
    assert "their IOPS and bandwidth cells flagged ROUNDED_RUNTIME" in err and "line 3" not in err, err


def test_a_udp_iperf3_log_without_a_bitrate_imports_named_a_flood(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A new campaign's UDP test must name its bitrate (test_iperf3_udp_bitrate), but a log that ran before without
    one ran at -b 0 and imports (its row was refused before: 'params: iperf3: params: protocol udp needs a bitrate'),
    each such row named as a flood (real capture, tests/corpus-net; its PARAM_MISMATCH is the 5G it ran at)."""
    shutil.copy(CORPUS.parent / "corpus-net" / "iperf3-udp-5G-loss-1s.json", tmp_path / "udp.json")
    (tmp_path / "manifest.csv").write_text(HEADER + "udp.json,node-1,host,iperf3,protocol=udp duration=1,"
                                                    "2024-03-01T10:00:00Z,\n")
    assert main(["import", str(tmp_path / "manifest.csv"), "--campaign", "old", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "1 row(s) are valid, 1 log(s) parse" in out, (out, err)
    assert "line 2: udp.json: UDP at no bitrate, so -b 0 (unlimited)" in err, err
    assert "1 of 1 log(s) ran UDP iperf3 at bitrate 0 (unlimited): a UDP sender at -b 0 floods" in err, err
