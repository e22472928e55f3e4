"""fio, run as root by the host agent, writes its data file at a fixed name in the work directory. A work
directory another user owns or may write to (the default /var/tmp/podtax, created first by anyone: /var/tmp
is world-writable) let that user put a symbolic link there, and fio overwrote the file it pointed to when it was
at least the run's size (audit hG: a database file, or /dev/sda). The agent now refuses such a run, naming the
directory and the fix, and makes its own work directory for itself alone. Real nats-server, real fio, the real
Agent."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import pytest
from podtax import events, subjects
from podtax.bus import Bus
from podtax_host_agent.__main__ import main as agent_main

from tests.integration.agent_once import NODE, handle_once

FIO = {"rw": "write", "bs": "4K", "size": "1M", "iodepth": 1, "direct": False, "runtime": 1}
NO_NATS = "nats://127.0.0.1:1"  # an agent that gets past its start-up checks exits 3 here
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="handing a directory to another user (chown) needs root")


async def _run(nats_url: str, tmp_path: Path, workdir: Path, run_id: str,
               after_start: Callable[[], None] = lambda: None) -> tuple[list[str], list[dict]]:
    logs, failures = await handle_once(nats_url, tmp_path, workdir, "fio", FIO, run_id, after_start)
    return [lg["run"]["run_id"] for lg in logs], failures


def _plant(shared: Path, victim: Path) -> None:
    """What another user can do to a folder of theirs, or one anyone may write to: link fio's data file."""
    shared.mkdir(exist_ok=True)
    shared.chmod(0o777)
    (shared / "podtax-fio.dat").symlink_to(victim)
    os.chown(shared, 65534, 65534)


@needs_root
def test_an_agent_does_not_start_on_a_work_directory_others_control(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    shared = tmp_path / "var-tmp-podtax"  # made first by another user, as /var/tmp/podtax can be
    _plant(shared, tmp_path / "victim")
    monkeypatch.setenv("PODTAX_AGENT_WORKDIR", str(shared))
    assert agent_main([]) == 2
    err = capsys.readouterr().err
    assert "PODTAX_AGENT_WORKDIR" in err and "belongs to uid 65534" in err, err
    shared.chmod(0o700)
    os.chown(shared, os.geteuid(), os.getegid())
    state = tmp_path / "state"
    state.mkdir(mode=0o777)
    state.chmod(0o777)
    monkeypatch.setenv("PODTAX_AGENT_STATE_DIR", str(state))
    assert agent_main([]) == 2
    err = capsys.readouterr().err
    assert "PODTAX_AGENT_STATE_DIR" in err and "writable by others (mode 777)" in err, err


@needs_root
async def test_fio_never_writes_through_a_link_in_a_work_directory_others_control(nats_url: str,
                                                                                  tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious" * 2**18)  # 2 MiB: fio writes into a file at least its size
    shared = tmp_path / "var-tmp-podtax"
    shared.mkdir(mode=0o700)  # the agent's at start, handed to another user since
    logs, failures = await _run(nats_url, tmp_path, shared, "linked-1", lambda: _plant(shared, victim))
    assert victim.read_bytes() == b"precious" * 2**18, "fio wrote through the link"
    assert logs == [] and [f["reason"] for f in failures] == ["unsafe-workdir"]
    assert str(shared) in failures[0]["detail"] and "PODTAX_AGENT_WORKDIR" in failures[0]["detail"]


async def test_fio_runs_in_a_work_directory_of_its_own(nats_url: str, tmp_path: Path) -> None:
    own = tmp_path / "work"  # not there yet: the agent makes it, for itself alone
    logs, failures = await _run(nats_url, tmp_path, own, "own-1")
    assert failures == [] and logs == ["own-1"]
    assert own.stat().st_mode & 0o077 == 0 and not (own / "podtax-fio.dat").exists()


@needs_root
def test_an_agent_does_not_start_on_a_link_to_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    real = tmp_path / "root-0700"
    real.mkdir(mode=0o700)  # this user's alone, but reached through another user's link, which may change
    link = tmp_path / "var-tmp-podtax"
    link.symlink_to(real)
    os.lchown(link, 65534, 65534)
    monkeypatch.setenv("PODTAX_NATS_URL", NO_NATS)
    monkeypatch.setenv("PODTAX_AGENT_WORKDIR", str(link))
    assert agent_main([]) == 2
    err = capsys.readouterr().err
    assert "PODTAX_AGENT_WORKDIR" in err and f"{link} is a symbolic link" in err, err


async def test_an_agent_started_under_umask_002_makes_its_directories_for_itself_alone(nats_url: str,
                                                                                       tmp_path: Path) -> None:
    work = tmp_path / "var-tmp" / "podtax"  # not there yet, nor its state directory (<work>/.state)
    env = {**os.environ, "PODTAX_NATS_URL": nats_url, "PODTAX_AGENT_NODE": NODE, "PODTAX_AGENT_WORKDIR": str(work),
           "PODTAX_LOG_FORMAT": "text"}
    env.pop("PODTAX_AGENT_STATE_DIR", None)
    bus = await Bus.connect(nats_url, "test/runner")
    nc = await nats.connect(nats_url)
    seen: list[str] = []  # "log", or the reason of a refusal

    async def on_msg(msg: Any) -> None:
        seen.append("log" if msg.subject.startswith(subjects.RUN_LOG) else json.loads(msg.data)["data"]["reason"])

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_msg)
    await nc.subscribe(f"{subjects.RUN_FAILED}.>", cb=on_msg)
    await bus.ensure_streams()
    old = os.umask(0o002)  # a group-writable default, as on many distributions' user accounts
    try:
        with (tmp_path / "agent.log").open("wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "podtax_host_agent"], env=env, stdout=out,
                                    stderr=subprocess.STDOUT)
    finally:
        os.umask(old)
    try:
        run = events.RunSpec(run_id="umask-1", campaign="c", node=NODE, env="host", test="fio", params=FIO,
                             timeout_s=60)
        await bus.publish(events.run_requested(run, "test"))
        for _ in range(600):
            if seen or proc.poll() is not None:
                break
            await asyncio.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(30)
        await nc.close()
        await bus.close()
    log = (tmp_path / "agent.log").read_text()
    assert seen == ["log"], (seen, log)
    assert stat.S_IMODE(work.stat().st_mode) == 0o700 and stat.S_IMODE((work / ".state").stat().st_mode) == 0o700
