"""A sockperf log of another run length, or not paced at the cell's rate, must not pass for one of its runs.

sockperf prints no echo of its options but ends with `[Total Run] RunTime=2.004 sec` for `-t 2`. Before, the parser
echoed only the protocol: the real capture tests/corpus-net/sockperf-pp-tcp-64-fullrtt.log (`-t 2`, COMMANDS.tsv,
sockperf 3.7) parsed for a cell of duration 10 with no flag, its percentiles those of a 2 s run. Now `duration` is
echoed (RunTime rounded down, when the timer ended the run) and compared. Likewise the same capture (unpaced: 167,114
messages in 2.000 s) parsed for a cell of rate 10000 (`--mps 10000`) gave no flag; a run that sent over the requested
rate over its whole run (`[Total Run]`) is now flagged PARAM_MISMATCH. Judged on `[Valid Duration]` instead (review r4),
the template's own paced runs of 1-4 s were flagged: sockperf keeps its schedule from the run's start and catches up
inside that window what it fell behind in its warm-up (sockperf-pp-udp-64-mps30000-catch-up.log, COMMANDS.tsv)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run

NET = Path(__file__).resolve().parents[1] / "corpus-net"


@pytest.mark.parametrize(("name", "seconds"), [("sockperf-pp-tcp-64-fullrtt.log", 2),
                                               ("sockperf-pp-udp-1k-mps10000.log", 2),
                                               ("sockperf-ul-udp-timer-then-signal.log", 1)])
def test_a_run_of_another_length_is_flagged(name: str, seconds: int) -> None:
    text = (NET / name).read_text()
    same = parse_run("sockperf", text, requested={"duration": seconds})
    assert same.echoed["duration"] == seconds
    assert not any(f.startswith("PARAM_MISMATCH: duration") for f in same.flags), same.flags
    other = parse_run("sockperf", text, requested={"duration": 10})
    assert f"PARAM_MISMATCH: duration echoed as {seconds}, requested 10" in other.flags


@pytest.mark.parametrize(("name", "rate", "flagged"), [("sockperf-pp-tcp-64-fullrtt.log", 10000, True),  # unpaced
                                                       ("sockperf-pp-tcp-64-fullrtt.log", 0, False),  # max: anything
                                                       ("sockperf-pp-udp-1k-mps10000.log", 10000, False),
                                                       ("sockperf-pp-tcp-mps10-few.log", 10, False),  # 20 in 2.004 s
                                                       # paced: 59,949 in 2.001 s; its window 36,208/s (caught up)
                                                       ("sockperf-pp-udp-64-mps30000-catch-up.log", 30000, False),
                                                       ("sockperf-pp-udp-64-mps30000-catch-up.log", 20000, True)])
def test_a_run_not_paced_at_the_requested_rate_is_flagged(name: str, rate: int, flagged: bool) -> None:
    got = parse_run("sockperf", (NET / name).read_text(), requested={"rate": rate})
    assert any(f.startswith("PARAM_MISMATCH: rate: sockperf sent ") for f in got.flags) == flagged, got.flags


def test_the_rate_is_that_of_the_whole_run() -> None:
    got = parse_run("sockperf", (NET / "sockperf-pp-tcp-64-fullrtt.log").read_text(), requested={"rate": 10000})
    assert any(f.startswith("PARAM_MISMATCH: rate: sockperf sent 83,557 messages a second, over the requested "
                            "rate of 10,000 messages a second") for f in got.flags), got.flags


@pytest.mark.parametrize(("name", "rate", "flagged"), [("sockperf-pp-udp-64-mps30000-catch-up.log", 30000, False),
                                                       ("sockperf-pp-tcp-64-fullrtt.log", 10000, True)])
def test_without_a_total_run_line_the_window_is_judged_with_the_catch_up(name: str, rate: int, flagged: bool) -> None:
    """The captures with their `[Total Run]` line cut out: the window's rate, allowing rate x 0.45 s caught up."""
    lines = (NET / name).read_text().splitlines(keepends=True)
    text = "".join(line for line in lines if "[Total Run]" not in line)
    got = parse_run("sockperf", text, requested={"rate": rate})
    assert any(f.startswith("PARAM_MISMATCH: rate: sockperf sent ") for f in got.flags) == flagged, got.flags


@pytest.mark.parametrize("rate", [0, 10000])
def test_a_damaged_total_run_time_is_a_parse_failure(rate: int) -> None:
    """`RunTime=1.2.3 sec` (the pattern reads digits and dots) raised ValueError from float(), a traceback."""
    text = (NET / "sockperf-pp-tcp-64-fullrtt.log").read_text().replace("RunTime=2.000 sec", "RunTime=1.2.3 sec")
    with pytest.raises(ParseFailure, match="expected a number, found '1.2.3'"):
        parse_run("sockperf", text, requested={"rate": rate})


def test_a_run_stopped_early_is_flagged_interrupted_not_echoed() -> None:
    """Ctrl-C at 3.5 s of `-t 6` (RunTime=3.339): INTERRUPTED says it; no duration is echoed for it."""
    got = parse_run("sockperf", (NET / "sockperf-pp-tcp-ctrl-c.log").read_text(), requested={"duration": 6})
    assert "duration" not in got.echoed
    assert any(f.startswith("INTERRUPTED") for f in got.flags)
    assert not any(f.startswith("PARAM_MISMATCH: duration") for f in got.flags)


@pytest.mark.parametrize(("run_time", "requested", "flagged"), [("2.600", 2, False),  # a busy host ended it late
                                                                  ("2.940", 2, False), ("1.960", 2, False),
                                                                  ("3.000", 2, True), ("1.000", 2, True)])
def test_a_run_its_timer_ended_late_keeps_its_length(run_time: str, requested: int, flagged: bool) -> None:
    """A 1 s run at load 29 read `RunTime=1.6` or so: rounded, it echoed 2 and was flagged PARAM_MISMATCH though
    its `-t` was the cell's. A timer ends a run late, never early, so the length is rounded down."""
    text = (NET / "sockperf-pp-tcp-64-fullrtt.log").read_text().replace("RunTime=2.000 sec", f"RunTime={run_time} sec")
    got = parse_run("sockperf", text, requested={"duration": requested})
    assert any(f.startswith("PARAM_MISMATCH: duration") for f in got.flags) == flagged, got.flags


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_real_sockperf_run_echoes_its_duration() -> None:
    if shutil.which("sockperf") is None:
        pytest.skip("sockperf is not installed (apt-get install sockperf)")
    port = _free_port()
    server = subprocess.Popen(["sockperf", "server", "--tcp", "-i", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # until the server listens (10 s at most)
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        proc = subprocess.run(["sockperf", "ping-pong", "--tcp", "-i", "127.0.0.1", "-p", str(port), "-t", "1",
                               "-m", "64", "--full-rtt"], capture_output=True, text=True, timeout=60, check=False)
    finally:
        server.terminate()
        server.wait(timeout=10)
    got = parse_run("sockperf", proc.stdout, proc.stderr, proc.returncode, {"protocol": "tcp", "duration": 3})
    assert got.echoed == {"protocol": "tcp", "duration": 1}
    assert "PARAM_MISMATCH: duration echoed as 1, requested 3" in got.flags
    paced = parse_run("sockperf", proc.stdout, proc.stderr, proc.returncode, {"protocol": "tcp", "rate": 100})
    assert any(f.startswith("PARAM_MISMATCH: rate: sockperf sent ") for f in paced.flags), paced.flags
