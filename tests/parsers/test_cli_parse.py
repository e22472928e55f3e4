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
    assert main(["parse", "does-not-exist.log"]) == 1


def test_only_a_regular_file_under_the_cap_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(b"sysbench 1.0.20\n" + b"x" * 1_000_000)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # reading it would block for ever
    assert main(["parse", "--json", str(big), str(fifo), "/dev/zero", str(tmp_path)]) == 1
    errors = [item["error"] for item in json.loads(capsys.readouterr().out)]
    assert [e["reason"] for e in errors] == ["unreadable"] * 4
    assert "more than 1,000,000 bytes" in errors[0]["detail"]
    assert all("not a regular file" in e["detail"] for e in errors[1:3])
    assert "directory" in errors[3]["detail"].lower()


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
    missing = tmp_path / "a-log-name-long-enough-to-take-this-line-past-eighty-columns.log"
    assert main(["parse", str(missing)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"FAILED {missing}: unreadable — {missing}: cannot open it (No such file or directory)"]
