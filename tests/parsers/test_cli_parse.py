"""`podtax parse`, called through podtax.cli.main.main (returns the exit status)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from podtax.cli.main import main

DEBIAN = "tests/corpus/debian12-x86_64"
GOOD = f"{DEBIAN}/sysbench-cpu-prime100000-1t.log"
BAD = f"{DEBIAN}/hdparm-not-permitted.log"


def test_json_output(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(__file__.rsplit("/tests/", 1)[0])
    assert main(["parse", "--json", GOOD]) == 0
    [item] = json.loads(capsys.readouterr().out)
    assert set(item) == {"file", "tool", "tool_version", "tool_build", "metrics", "echoed", "flags"}
    assert item["tool"] == "sysbench" and item["tool_version"] == "1.0.20"
    assert {"name": "events_per_second", "value": 183.01, "unit": "events/s", "higher_is_better": True} \
        in item["metrics"]


def test_failure_sets_exit_status(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(__file__.rsplit("/tests/", 1)[0])
    assert main(["parse", "--json", GOOD, BAD]) == 1
    good, bad = json.loads(capsys.readouterr().out)
    assert "error" not in good
    assert bad["error"]["reason"] == "permission-denied" and bad["error"]["detail"]


def test_table_output_and_tool_option(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(__file__.rsplit("/tests/", 1)[0])
    rpi = "tests/corpus/mixed/raspberry-pi-zero-w/AikonCWD-rpi-benchmark"
    assert main(["parse", "--tool", "hdparm", rpi]) == 0
    out = capsys.readouterr().out
    assert "read_mb_per_second" in out and "24.59" in out
    assert main(["parse", rpi]) == 1
    assert "unknown-format" in capsys.readouterr().out
    assert main(["parse", "--tool", "nosuchtool", rpi]) == 2


def test_only_a_regular_file_under_the_cap_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(b"sysbench 1.0.20\n" + b"x" * 1_000_000)
    assert main(["parse", "--json", str(big)]) == 1
    [error] = [item["error"] for item in json.loads(capsys.readouterr().out)]
    assert error["reason"] == "unreadable" and "more than 1,000,000 bytes" in error["detail"]


def _fifo(tmp_path: Path) -> str:
    os.mkfifo(tmp_path / "fifo")  # reading it would block for ever
    return str(tmp_path / "fifo")


NO_SUCH = "no such file: check its path (a shell pattern that matched nothing stays as written)"
DEVICE = "is a device, FIFO or socket, not a log file: save the benchmark's output to a file and name that"
NO_LOG = {  # a file named on the command line that is no log: a usage mistake (as argparse's FileType), exit 2
    "missing": (lambda tmp: str(tmp / "does-not-exist.log"), NO_SUCH),
    "missing folder": (lambda tmp: str(tmp / "nope" / "x.log"), NO_SUCH),
    "under a file": (lambda tmp: str(Path(GOOD_ABS) / "x.log"), NO_SUCH),
    "folder": (lambda tmp: str(tmp), "is a folder: name the logs in it, e.g. {tmp}/*.log"),
    "folder/": (lambda tmp: f"{tmp}/", "is a folder: name the logs in it, e.g. {tmp}/*.log"),
    "fifo": (_fifo, DEVICE),
    "device": (lambda tmp: "/dev/zero", DEVICE),
}
GOOD_ABS = str(Path(__file__).resolve().parents[2] / GOOD)


@pytest.mark.parametrize("case", sorted(NO_LOG))
def test_a_file_that_is_no_log_is_a_usage_mistake(case: str, capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    """`podtax parse nope.log` printed a FAILED line and exited 1, as for a log the parser rejects; then (4ce331b)
    nothing was parsed beside it, not even a good log (`podtax parse g/*` with a sub-folder in g printed nothing).
    Now, as grep and cat: one line naming the file, why and what to do; the good log parsed and printed; exit 2."""
    make, why = NO_LOG[case]
    name = make(tmp_path)
    assert main(["parse", "--json", GOOD_ABS, name]) == 2
    out, err = capsys.readouterr()
    [good] = json.loads(out)
    assert good["file"] == GOOD_ABS and good["tool"] == "sysbench"
    assert err.splitlines() == [f"podtax parse: {name!r}: {why.format(tmp=tmp_path)}"]


def test_each_file_that_is_no_log_is_named_and_the_rest_is_parsed(capsys: pytest.CaptureFixture[str],
                                                                   tmp_path: Path) -> None:
    """`podtax parse g/*`: a folder and a missing file among logs, one of them rejected by the parser."""
    (tmp_path / "sub").mkdir()
    bad = str(Path(GOOD_ABS).parent / "hdparm-not-permitted.log")
    names = [str(tmp_path / "a.log"), GOOD_ABS, str(tmp_path / "sub"), bad]
    assert main(["parse", *names]) == 2  # a usage mistake outranks a rejected log (1)
    out, err = capsys.readouterr()
    assert err.splitlines() == [f"podtax parse: {names[0]!r}: {NO_SUCH}",
                                f"podtax parse: {names[2]!r}: is a folder: name the logs in it, e.g. "
                                f"{tmp_path}/sub/*.log",
                                "1 of 2 file(s) failed to parse"]
    assert "events_per_second" in out and f"FAILED {bad}: permission-denied" in out
    assert main(["parse", "--json", str(tmp_path / "a.log"), str(tmp_path / "sub")]) == 2  # nothing left to parse
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 2


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-8-sig"])
def test_a_log_saved_with_a_byte_order_mark_is_read(encoding: str, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(__file__.rsplit("/tests/", 1)[0])
    text = Path(GOOD).read_text(encoding="utf-8")
    saved = tmp_path / "saved.log"  # as PowerShell's `>` (UTF-16 LE + BOM) or Notepad (UTF-8 + BOM) writes it
    saved.write_bytes(("\ufeff" + text).encode(encoding) if encoding == "utf-16-be" else text.encode(encoding))
    assert main(["parse", "--json", str(saved)]) == 0
    [item] = json.loads(capsys.readouterr().out)
    assert item["tool_version"] == "1.0.20"
    assert {"name": "events_per_second", "value": 183.01, "unit": "events/s", "higher_is_better": True} \
        in item["metrics"]


def test_bracketed_log_text_is_printed_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    """Rich markup must not eat a tool's `[fd=3]` (a real sockperf error), nor crash on `[/tmp/x]`."""
    found = Path(__file__).resolve().parents[1] / "corpus-found" / "sockperf-bracketed-error.log"
    assert main(["parse", str(found)]) == 1
    assert "[fd=3]" in capsys.readouterr().out.replace("\n", "")


def test_closing_tag_like_text_does_not_crash(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("sockperf: ERROR: [/tmp/x] Can't bind socket (errno=98 Address already in use)\n")
    assert main(["parse", str(log)]) == 1
    assert "[/tmp/x]" in capsys.readouterr().out.replace("\n", "")


def test_a_failed_log_is_one_whole_line_off_a_terminal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Off a terminal (here capsys; a pipe, make) the FAILED line keeps its reason and detail on one line: the
    command built its own 80-column console, which broke it mid-phrase."""
    big = tmp_path / "a-log-name-long-enough-to-take-this-line-past-eighty-columns.log"
    big.write_bytes(b"x" * 1_000_001)
    assert main(["parse", str(big)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"FAILED {big}: unreadable — {big} holds more than 1,000,000 bytes, above the cap; cut it to "
                     "the benchmark's own output"]
