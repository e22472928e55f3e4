"""The host agent's guards (issue 12, items 1 and 11): the benchmark dies with the agent, a starting
agent reaps a recorded process group, the node lock outlives the agent while its processes live,
fio's data file never stays behind and a size beyond the free space is refused before starting."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from podtax import events
from podtax_host_agent import guard
from podtax_host_agent.execute import run_argv, run_template, size_bytes, space_problem

REPO = Path(__file__).resolve().parents[2]


def gone(pid: int, within_s: float = 10.0) -> bool:
    """True once `pid` has exited (a zombie waiting for its reaper counts as exited)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        fields = guard._stat(pid)
        if fields is None or fields[0] in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def pid_in(path: Path, timeout: float) -> int:
    """The pid a child writes into `path`, once written: the file exists empty for a moment before its number."""
    deadline = time.monotonic() + timeout
    while not (text := path.read_text() if path.exists() else "").strip().isdigit():
        assert time.monotonic() < deadline, f"no pid in {path} within {timeout:g} s: {text!r}"
        time.sleep(0.05)
    return int(text)


def test_the_benchmark_dies_when_the_agent_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = (
        "import asyncio, pathlib, sys\n"
        "from podtax_host_agent.execute import run_argv\n"
        f"p = pathlib.Path({str(pid_file)!r})\n"
        "asyncio.run(run_argv(['sleep', '60'], 120, 10_000, p.parent,\n"
        "                     on_start=lambda pid, marker: p.write_text(str(pid))))\n"
    )
    agent = subprocess.Popen([sys.executable, "-c", script])
    try:
        child = pid_in(pid_file, 20)
        assert not gone(child, 0.2), "the benchmark should be running"
        agent.send_signal(signal.SIGKILL)
        agent.wait(10)
        assert gone(child), "the benchmark outlived the agent"
    finally:
        agent.kill()
        agent.wait()


def _group_with_grandchild() -> subprocess.Popen[bytes]:
    code = "import subprocess, time; subprocess.Popen(['sleep', '60']); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    deadline = time.monotonic() + 10
    while len(guard.group_members(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def test_a_starting_agent_reaps_the_recorded_group(tmp_path: Path) -> None:
    proc = _group_with_grandchild()
    try:
        members = guard.group_members(proc.pid)
        assert len(members) == 2
        guard.record(tmp_path, proc.pid, "run-7")
        done = guard.reap(tmp_path)
        assert done is not None and "killed 2" in done and "run-7" in done
        assert all(gone(pid) for pid in members)
        assert not (tmp_path / guard.RECORD).exists()
        assert guard.reap(tmp_path) is None
    finally:
        proc.kill()
        proc.wait()


ESCAPE = ("import os, sys, time\n"
          "if os.fork() == 0:\n"
          "    os.setsid()  # leaves the process group, as fio's job processes do\n"
          "    open(sys.argv[1], 'w').write(str(os.getpid()))\n"
          "    time.sleep(60)\n"
          "    os._exit(0)\n"
          "time.sleep(60)\n")


async def test_processes_that_leave_the_group_are_killed_when_the_run_ends(tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    out = await run_argv([sys.executable, "-c", ESCAPE, str(pid_file)], timeout_s=1.0, cap_bytes=10_000,
                         cwd=tmp_path)
    assert out.timed_out
    escaped = int(pid_file.read_text())
    assert guard._stat(escaped) is None or gone(escaped, 0.5), "a process that called setsid outlived the run"


def test_reap_kills_marked_processes_outside_the_recorded_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    env = {**os.environ, guard.MARKER: "m-123"}
    proc = subprocess.Popen([sys.executable, "-c", ESCAPE, str(pid_file)], start_new_session=True, env=env)
    try:
        escaped = pid_in(pid_file, 10)
        guard.record(tmp_path, proc.pid, "run-9", "m-123")
        done = guard.reap(tmp_path)
        assert done is not None and "outside it" in done
        assert gone(escaped) and gone(proc.pid)
        assert guard.marked("m-123") == []
    finally:
        proc.kill()
        proc.wait()


def test_reap_leaves_alone_a_process_that_reused_the_pid(tmp_path: Path) -> None:
    proc = _group_with_grandchild()
    try:
        guard.record(tmp_path, proc.pid, "old-run")
        doc = (tmp_path / guard.RECORD).read_text().replace(f'"start_ticks": "{guard.start_ticks(proc.pid)}"',
                                                              '"start_ticks": "1"')
        (tmp_path / guard.RECORD).write_text(doc)
        done = guard.reap(tmp_path)
        assert done is not None and "no process" in done
        assert len(guard.group_members(proc.pid)) == 2, "an unrelated process group was killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_the_node_lock_is_held_until_the_last_process_of_a_run_exits(tmp_path: Path) -> None:
    lock = guard.NodeLock(tmp_path)
    fd = lock.try_acquire()
    assert fd is not None
    orphan = subprocess.Popen(["sleep", "60"], pass_fds=(fd,))  # as a benchmark inherits it
    os.close(fd)  # the agent is gone; its benchmark lives on
    try:
        assert lock.try_acquire() is None, "a second run could start beside the orphan"
    finally:
        orphan.kill()
        orphan.wait()
    fd2 = lock.try_acquire()
    assert fd2 is not None
    os.close(fd2)


def run_spec(params: dict, timeout_s: float = 60) -> events.RunSpec:
    return events.RunSpec(run_id="f", campaign="c", node="n", env="host", test="fio", params=params,
                          timeout_s=timeout_s)


def test_fio_beyond_the_free_space_is_refused_with_the_reason(tmp_path: Path) -> None:
    problem = space_problem(run_spec({"size": "9999999T"}), tmp_path)
    assert problem is not None and "9999999T" in problem and "free" in problem and "lower size" in problem
    assert space_problem(run_spec({"size": "1M"}), tmp_path) is None
    assert size_bytes("64M") == 64 * 1024**2 and size_bytes("3") == 3


async def test_fio_data_file_is_deleted_after_success_failure_and_timeout(tmp_path: Path) -> None:
    ok = await run_template(run_spec({"size": "1M", "runtime": 1, "direct": False, "rw": "write"}),
                            100_000, tmp_path, None)
    assert ok.exit_code == 0 and '"jobs"' in ok.stdout
    assert list(tmp_path.iterdir()) == []
    # Failure (fio killed by SIGXFSZ laying out its file past a 512 KiB file-size limit), with the file of an
    # earlier interrupted run in place: it goes too.
    (tmp_path / "podtax-fio.dat").write_bytes(b"x" * 4096)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (512 * 1024, hard))
    try:
        failed = await run_template(run_spec({"size": "1M", "runtime": 1, "direct": False}), 100_000, tmp_path, None)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert failed.exit_code != 0 and '"jobs"' not in failed.stdout
    assert list(tmp_path.iterdir()) == []
    # Timeout: 256 MiB of synchronous 4 KiB random writes outlast a 1 s timeout; by then fio's job process
    # (which calls setsid, leaving the process group) is writing.
    slow = await run_template(run_spec({"size": "256M", "runtime": 60, "direct": True, "rw": "randwrite",
                                        "bs": "4K", "iodepth": 1}, timeout_s=1.0), 100_000, tmp_path, None)
    assert slow.timed_out
    assert list(tmp_path.iterdir()) == []
    # fio's job process calls setsid(): it must be gone too, not writing on into the deleted file.
    leftovers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and str(tmp_path).encode() in
                 _cmdline(p)]
    assert leftovers == []


def _cmdline(proc_dir: Path) -> bytes:
    try:
        return (proc_dir / "cmdline").read_bytes()
    except OSError:
        return b""


def test_the_cancelled_list_skips_what_is_no_campaign_name_and_is_not_read_through_a_link(tmp_path: Path) -> None:
    """<state>/cancelled torn or put there by hand: a non-UTF-8 byte raised in Agent.__init__ (a crash loop), names
    were not checked, a link was followed and the whole file kept; now bad names are skipped, a link or a FIFO reads
    as none, at most CANCELLED_KEEP names are kept, and a note is written whole (temp file, fsync, replace)."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / guard.CANCELLED).write_bytes(b"a\n\xff\xfe\nBad_Name\n../x\n" + b"b" * 51 + b"\nc\n")
    os.utime(state / guard.CANCELLED, (1e9, 1e9))
    written = "@1000000000.000000"  # a name alone is noted at the list's time
    assert guard.cancelled_campaigns(state) == {"a": written, "c": written}
    guard.note_cancelled(state, {**guard.cancelled_campaigns(state), "d": "@2000000000.5"})
    assert (state / guard.CANCELLED).read_text() == f"a {written}\nc {written}\nd @2000000000.5\n"
    (state / guard.CANCELLED).write_text("".join(f"n{i}\n" for i in range(guard.CANCELLED_KEEP + 5)))
    assert list(guard.cancelled_campaigns(state))[-1] == f"n{guard.CANCELLED_KEEP + 4}"
    assert len(guard.cancelled_campaigns(state)) == guard.CANCELLED_KEEP
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("e\n")
    (state / guard.CANCELLED).unlink()
    (state / guard.CANCELLED).symlink_to(elsewhere)
    assert guard.cancelled_campaigns(state) == {}
    (state / guard.CANCELLED).unlink()
    os.mkfifo(state / guard.CANCELLED)
    assert guard.cancelled_campaigns(state) == {}


def test_the_cancelled_list_keeps_each_campaigns_stream_and_reads_an_older_agents_names(tmp_path: Path) -> None:
    """A name is unique in one NATS only: each note says which events stream (its creation time) the campaign was
    cancelled in, or, noted while that was unknown, when it was noted. A list of an older agent (names alone) is read,
    each name noted at the list's time: given the stream connected to when noted since that stream was made, dropped
    when noted before (cancelled in an earlier NATS)."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    s1, s2 = "2026-12-01T10:00:00.123456+00:00", "2026-12-05T09:00:00+00:00"
    (state / guard.CANCELLED).write_text(f"old\nnew {s1}\nlate @300.25\nbad 2026 12\nx not-a-time\ny @1e9\n")
    os.utime(state / guard.CANCELLED, (100, 100))
    notes = guard.cancelled_campaigns(state)
    assert notes == {"old": "@100.000000", "new": s1, "late": "@300.25"}
    assert guard.stamped(notes, s2, 200.0) == {"new": s1, "late": s2}, "noted before the stream: an earlier NATS's"
    assert guard.stamped(notes, s2, 50.0) == {"old": s2, "new": s1, "late": s2}
    guard.note_cancelled(state, {"new": s1, "old": s2})
    assert guard.cancelled_campaigns(state) == {"new": s1, "old": s2}


def test_the_reported_note_names_its_nats_and_an_older_agents_is_judged_by_its_time(tmp_path: Path) -> None:
    """<state>/reported names the events stream the run was reported in, so a restart tells this NATS's run from an
    earlier one's by identity, not by the host's clock against the server's (guard.same_nats); an older agent's note
    (the run id alone) is judged by its mtime, as is one written while the stream was unknown."""
    s1, s2 = "2026-12-01T10:00:00.123456+00:00", "2026-12-05T09:00:00+00:00"
    assert guard.last_reported_note(tmp_path) is None and guard.last_reported(tmp_path) is None
    guard.reported(tmp_path, "d-1", s1)
    assert guard.last_reported_note(tmp_path) == ("d-1", s1) and guard.last_reported(tmp_path) == "d-1"
    assert guard.same_nats(s1, s1, 1e12) and not guard.same_nats(s1, s2, 0.0)
    (tmp_path / guard.REPORTED).write_text("d-2")
    os.utime(tmp_path / guard.REPORTED, (100, 100))
    assert guard.last_reported_note(tmp_path) == ("d-2", "@100.000000")
    assert guard.same_nats("@100.000000", s2, 99.5) and not guard.same_nats("@100.000000", s2, 100.5)
    assert not guard.same_nats("@x", s2, 0.0) and not guard.same_nats("", "", 0.0), "a note put there by hand"
    guard.reported(tmp_path, "d-3")
    run_id, nats = guard.last_reported_note(tmp_path) or ("", "")
    assert run_id == "d-3" and guard.same_nats(nats, s2, time.time() - 60), "stream unknown: noted now"


def test_the_reported_note_is_read_as_the_cancelled_list_not_through_a_link(tmp_path: Path) -> None:
    """<state>/reported was read with read_text(): a link was followed, a non-UTF-8 byte raised (in Agent.__init__: a
    crash loop), a FIFO blocked the start for ever and a huge file was read whole. It is now read as
    <state>/cancelled is: a link or a FIFO reads as none, a bad byte is replaced, at most REPORTED_BYTES are read."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / guard.REPORTED).write_bytes(b"d-\xff1 @100\n")
    assert guard.last_reported_note(state) == ("d-\ufffd1", "@100")
    (state / guard.REPORTED).write_bytes(b"d-1 " + b"9" * (guard.REPORTED_BYTES * 4))
    assert guard.last_reported_note(state) == ("d-1", "9" * (guard.REPORTED_BYTES - 4)), "read whole"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("e-1 @100\n")
    (state / guard.REPORTED).unlink()
    (state / guard.REPORTED).symlink_to(elsewhere)
    assert guard.last_reported_note(state) is None, "read through a link"
    (state / guard.REPORTED).unlink()
    os.mkfifo(state / guard.REPORTED)
    assert guard.last_reported_note(state) is None and guard.last_reported(state) is None
