"""How the host agent (root on real hosts) starts a benchmark, from the point of view of someone who can publish run
requests or write in the work directory (audit hS). Real nats-server, the real Agent, the real tools (small
parameters).

- A host network run starts `python -m podtax.netpair` in the work directory, and `python -m` puts its working
  directory first on the import path: a `podtax/netpair.py` planted there ran as root. The work directory was
  checked (owner, mode, link) only before fio runs. Now every run is refused when the work directory is unsafe,
  and the interpreter runs isolated (`-I`: no working directory on the path, no PYTHON* variables).
- sysbench memory allocates its block and writes it through: a request for a block of the host's memory or more
  ran on the host, where no cgroup limit stops it. Now refused beyond the available memory (insufficient-memory).
- The node lock was opened (O_CREAT, as root) through any link in the state directory, checked only at start:
  a state directory become anyone's let them create a file anywhere. It is checked before every run now
  (unsafe-state-dir), and the lock is never opened through a link.
- A relative entry in the agent's PATH made a tool be looked up in the work directory (and a tool's version and
  its run could come from different paths). Tools are looked up on the absolute entries, then /usr/sbin, /sbin.
- The state directory was checked again before a run only: the log kept in the outbox and the run noted as
  reported after it (a run may last an hour) were written through any link found there by then. Checked again
  before those writes; when unsafe, the log is published without a word written there.
- fio reads a ':' in its --filename as a list of files: a work directory `/x/a:b` had fio write `/x/a`. Such a
  work directory stops the agent at start (exit 2).
- A tool uninstalled after the agent read its version raised FileNotFoundError on every delivery; refused now
  (tool-missing).
- fio's free-space check read the request's `size` as written and raised on `1m` (valid: fio reads it as 1M), so
  the request was retried until dead-lettered.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from podtax import templates
from podtax_host_agent import guard
from podtax_host_agent.__main__ import main as agent_main
from podtax_host_agent.execute import run_argv

from tests.integration.agent_once import handle_once as _handle

IPERF3 = {"server": "127.0.0.1", "port": 15201, "duration": 1}


def _plant(folder: Path, canary: Path) -> None:
    """What anyone who may write in the folder can do: a `podtax` package that `python -m` in it imports."""
    (folder / "podtax").mkdir(parents=True, exist_ok=True)
    (folder / "podtax" / "__init__.py").write_text("")
    (folder / "podtax" / "netpair.py").write_text(f"open({str(canary)!r}, 'w').write('ran')\n")


async def test_a_network_run_is_refused_in_a_work_directory_others_may_write(nats_url: str, tmp_path: Path) -> None:
    work, canary = tmp_path / "work", tmp_path / "canary"

    def hand_over() -> None:  # the agent made it for itself at start; since then, it became anyone's
        work.mkdir(mode=0o700, exist_ok=True)
        work.chmod(0o777)
        _plant(work, canary)

    logs, failures = await _handle(nats_url, tmp_path, work, "iperf3", IPERF3, "net-1", hand_over)
    assert not canary.exists(), "code planted in the work directory ran"
    assert logs == [] and [f["reason"] for f in failures] == ["unsafe-workdir"], (logs, failures)
    assert "writable by others" in failures[0]["detail"]


async def test_the_network_pair_imports_nothing_from_its_working_directory(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    _plant(tmp_path, canary)
    argv = templates.get("iperf3").build_argv(IPERF3, str(tmp_path))
    out = await run_argv(argv, 60, 100_000, tmp_path)
    assert not canary.exists(), "podtax/netpair.py of the working directory ran"
    assert out.exit_code == 0 and '"end"' in out.stdout, (out.exit_code, out.stderr[-2000:])
    assert sorted(os.listdir(tmp_path)) == ["podtax"], "the run left files behind"


def _mem_kib(field: str) -> int:
    return next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith(f"{field}:"))


async def test_a_sysbench_memory_block_larger_than_the_free_memory_is_refused(nats_url: str, tmp_path: Path) -> None:
    # sysbench memory allocates its block and writes it through before it starts: a block of the host's memory or
    # more drove the host (not a pod with a limit) into swap and the OOM killer
    block = 1 << (2 * _mem_kib("MemTotal") * 1024).bit_length()  # a power of two above twice the memory
    size = f"{block >> 30}G"
    logs, failures = await _handle(nats_url, tmp_path, tmp_path / "work", "sysbench-memory",
                                   {"block_size": size, "total_size": size, "time": 1}, "mem-1")
    assert logs == [] and [f["reason"] for f in failures] == ["insufficient-memory"], (logs, failures)
    assert f"block_size {size}" in failures[0]["detail"] and "MemAvailable" in failures[0]["detail"]
    logs, failures = await _handle(nats_url, tmp_path, tmp_path / "work", "sysbench-memory",
                                   {"block_size": "1m", "total_size": "1M", "time": 1}, "mem-2")
    assert failures == [] and [lg["exit_code"] for lg in logs] == [0], (logs, failures)


async def test_a_size_in_lower_case_runs_fio(nats_url: str, tmp_path: Path) -> None:
    # the template reads 1m as 1M; the agent's free-space check read the request's text and raised on it
    fio = {"rw": "write", "bs": "4k", "size": "1m", "iodepth": 1, "direct": False, "runtime": 1}
    logs, failures = await _handle(nats_url, tmp_path, tmp_path / "work", "fio", fio, "fio-1")
    assert failures == [] and [lg["exit_code"] for lg in logs] == [0], (logs, failures)


async def test_no_run_writes_through_a_link_in_a_state_directory_others_may_write(nats_url: str,
                                                                                   tmp_path: Path) -> None:
    # the node lock was opened (O_CREAT, as root) through any link found in the state directory, before anything
    # checked it: a state directory become anyone's let them create a file anywhere (/etc/nologin stops logins)
    state, victim = tmp_path / "state-lock-1", tmp_path / "nologin"

    def hand_over() -> None:
        state.mkdir(mode=0o700)
        state.chmod(0o777)
        (state / "node.lock").symlink_to(victim)

    logs, failures = await _handle(nats_url, tmp_path, tmp_path / "work", "sysbench-cpu",
                                   {"threads": 1, "events": 10, "time": 1}, "lock-1", hand_over)
    assert not victim.exists(), "the agent created a file through a link in its state directory"
    assert logs == [] and [f["reason"] for f in failures] == ["unsafe-state-dir"], (logs, failures)
    assert "writable by others" in failures[0]["detail"] and "PODTAX_AGENT_STATE_DIR" in failures[0]["detail"]


async def test_a_tool_is_never_looked_up_in_the_work_directory(nats_url: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # an empty or relative entry in the agent's PATH (`PATH=:/usr/bin`, `.`) made the child look for its tool in
    # its working directory first, and tools and their versions were found on different paths (hdparm's
    # version in /usr/sbin when PATH lacks it, its run nowhere)
    work, canary = tmp_path / "work", tmp_path / "canary"
    work.mkdir(mode=0o700)
    fake = work / "sysbench"
    fake.write_text(f"#!/bin/sh\ntouch {canary}\n")
    fake.chmod(0o700)
    monkeypatch.setenv("PATH", f":.:{os.environ.get('PATH', '/usr/bin:/bin')}")
    logs, failures = await _handle(nats_url, tmp_path, work, "sysbench-cpu", {"threads": 1, "events": 10, "time": 1},
                                   "path-1")
    assert not canary.exists(), "the work directory's sysbench ran"
    assert failures == [] and [lg["exit_code"] for lg in logs] == [0] and "events per second" in logs[0]["stdout"]


def test_a_work_directory_whose_name_fio_splits_stops_the_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # fio reads `--filename=/var/lib/a:b/podtax-fio.dat` as two files: it wrote /var/lib/a, outside the checked
    # directory, and the agent deleted nothing
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:1")  # an agent past its start-up checks exits 3 here
    monkeypatch.setenv("PODTAX_AGENT_WORKDIR", str(tmp_path / "a:b"))
    monkeypatch.setenv("PODTAX_AGENT_STATE_DIR", str(tmp_path / "state"))
    assert agent_main([]) == 2
    err = capsys.readouterr().err
    assert "PODTAX_AGENT_WORKDIR" in err and "':'" in err, err


@pytest.mark.parametrize(("test", "params", "tool"), [
    ("sysbench-cpu", {"threads": 1, "events": 10, "time": 1}, "sysbench"),
    # a loopback network run's argv starts with the agent's python (podtax.netpair), which is never gone: the
    # check looked that up, not iperf3, and the run started
    ("iperf3", IPERF3, "iperf3"),
])
async def test_a_tool_gone_since_the_facts_is_refused(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      test: str, params: dict, tool: str) -> None:
    # uninstalled after the agent noted its version (facts are re-read every 5 minutes): the run raised
    # FileNotFoundError on every delivery until dead-lettered, and the runner never heard why
    logs, failures = await _handle(nats_url, tmp_path, tmp_path / "work", test, params, "gone-1",
                                   lambda: monkeypatch.setenv("PATH", str(tmp_path / "empty")))
    assert logs == [] and [f["reason"] for f in failures] == ["tool-missing"], (logs, failures)
    assert tool in failures[0]["detail"]


async def test_no_log_is_written_through_a_link_in_a_state_directory_others_took_during_the_run(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state, victims = tmp_path / "state-during-1", (tmp_path / "outbox-victim", tmp_path / "reported-victim")
    note = guard.record

    def hand_over_during_the_run(state_dir: Path, pid: int, run_id: str, marker: str = "") -> None:
        note(state_dir, pid, run_id, marker)  # the benchmark runs: the directory is handed over meanwhile
        state.chmod(0o777)
        (state / "outbox").mkdir(exist_ok=True)
        (state / "outbox" / "during-1.tmp").symlink_to(victims[0])
        (state / ".reported.tmp").symlink_to(victims[1])

    monkeypatch.setattr(guard, "record", hand_over_during_the_run)
    logs, failures = await _handle(nats_url, tmp_path, tmp_path / "work", "sysbench-cpu",
                                   {"threads": 1, "events": 10, "time": 1}, "during-1")
    assert [v.name for v in victims if v.exists()] == [], "the agent wrote through a link in its state directory"
    assert failures == [] and [lg["exit_code"] for lg in logs] == [0], (logs, failures)  # the measurement is kept


def _world_writable(state: Path, victim: Path) -> None:
    state.chmod(0o777)
    (state / f".{guard.RECORD}.tmp").symlink_to(victim)  # the run record's temporary file


def _a_link_elsewhere(state: Path, victim: Path) -> None:
    victim.mkdir()
    (victim / guard.RECORD).write_text("someone's file")  # what clearing the run record would delete
    state.rename(state.with_name(f"{state.name}-old"))
    state.symlink_to(victim)


def _files(victim: Path) -> dict[str, str]:
    found = [victim] if victim.is_file() else sorted(victim.iterdir()) if victim.is_dir() else []
    return {p.name: p.read_text() for p in found}


@pytest.mark.parametrize("hand_over", [_world_writable, _a_link_elsewhere])
async def test_no_run_writes_in_a_state_directory_others_took_while_it_waited_for_the_node(
        nats_url: str, tmp_path: Path, hand_over: Callable[[Path, Path], None]) -> None:
    # the state directory was checked before the node lock, whose wait has no bound (an earlier run's orphans hold
    # it): the run record was then written, and cleared after the run, through whatever was found there by then
    state, victim = tmp_path / "state-wait-1", tmp_path / "victim"
    state.mkdir(mode=0o700)
    holder = os.open(state / guard.LOCK, os.O_RDWR | os.O_CREAT, 0o600)  # the earlier run's processes
    fcntl.flock(holder, fcntl.LOCK_EX)

    made: dict[str, str] = {}

    class HandOverWhileWaiting(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("node busy"):
                hand_over(state, victim)
                made.update(_files(victim))
                os.close(holder)  # they exit: the node is idle

    handler = HandOverWhileWaiting()
    logging.getLogger("podtax.host_agent").addHandler(handler)
    try:
        logs, failures = await _handle(nats_url, tmp_path, tmp_path / "work", "sysbench-cpu",
                                       {"threads": 1, "events": 10, "time": 1}, "wait-1")
    finally:
        logging.getLogger("podtax.host_agent").removeHandler(handler)
    assert logs == [] and [f["reason"] for f in failures] == ["unsafe-state-dir"], (logs, failures)
    assert _files(victim) == made, "the agent wrote or deleted through what it found in its state directory"


async def test_a_tool_that_cannot_be_executed_is_refused_with_the_reason(nats_url: str, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # the launcher (guard.dying_with_agent) cannot exec a tool whose interpreter line names nothing: before, the
    # run was reported as sysbench's exit status 127, its cause only in the raw log's stderr
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "sysbench").write_text("#!/no/such/interpreter\n")
    (tools / "sysbench").chmod(0o755)
    logs, failures = await _handle(nats_url, tmp_path, tmp_path / "work", "sysbench-cpu",
                                   {"threads": 1, "events": 10, "time": 1}, "exec-1",
                                   lambda: monkeypatch.setenv("PATH", str(tools)))
    assert logs == [] and [f["reason"] for f in failures] == ["exec-failed"], (logs, failures)
    assert "cannot execute" in failures[0]["detail"] and "sysbench" in failures[0]["detail"], failures


async def test_runs_are_refused_once_the_agents_python_is_gone(nats_url: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # every benchmark starts through the agent's own Python (the launcher): its virtualenv made again under a
    # running agent raised FileNotFoundError on every delivery until the request was dead-lettered
    logs, failures = await _handle(nats_url, tmp_path, tmp_path / "work", "sysbench-cpu",
                                   {"threads": 1, "events": 10, "time": 1}, "broken-1",
                                   lambda: monkeypatch.setattr("sys.executable", str(tmp_path / "gone" / "python")))
    assert logs == [] and [f["reason"] for f in failures] == ["agent-broken"], (logs, failures)
    assert "restarted" in failures[0]["detail"], failures
