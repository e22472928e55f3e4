"""Ctrl-C while `podtax campaign status --follow` follows a campaign says that the campaign goes on and how to follow
or cancel it (helper hU, session 54): it exited 130 without a word (typer turns KeyboardInterrupt into Exit(130)),
and a user who pressed Ctrl-C under `campaign submit --follow` could take the campaign for stopped.

Real nats-server, runner, host agent running real sysbench, parser and analyzer; the real `podtax` console script.
The SIGINT is sent while the follower sleeps between two polls: its only sleep once the campaign is planned (the
sleep's system call read from /proc/<pid>/syscall), so no timing is involved."""

from __future__ import annotations

import asyncio
import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.harness import run_cli, services

NODE = "n1"
CLOCK_NANOSLEEP = {"x86_64": 230, "aarch64": 115}[platform.machine()]  # time.sleep's system call (Python 3.11)
SPEC = f"""name: long
nodes: [{NODE}]
environments: [host]
tests:
  - test: sysbench-cpu
    params: {{threads: 1, max_prime: 2000, events: 0, time: 30}}
repetitions: {{min: 2, max: 2}}
timeout: 120
"""


def _sleeping(pid: int) -> bool:
    return Path(f"/proc/{pid}/syscall").read_text().split()[0] == str(CLOCK_NANOSLEEP)


async def test_ctrl_c_while_following_says_the_campaign_goes_on(nats_url: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)  # the CLI in this process (run_cli) and in the follower
    (tmp_path / "c.yaml").write_text(SPEC)
    async with services(nats_url, tmp_path) as s:
        await s.campaign_stack(NODE)
        assert await run_cli("campaign", "submit", str(tmp_path / "c.yaml")) == 0
        while await run_cli("campaign", "status", "long") != 0:  # planned by the runner
            await asyncio.sleep(0.2)
        follower = subprocess.Popen([str(Path(sys.executable).parent / "podtax"), "campaign", "status", "long",
                                     "--follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "PODTAX_DATA_DIR": str(tmp_path)})
        while not _sleeping(follower.pid):
            assert follower.poll() is None, follower.communicate()
            await asyncio.sleep(0.05)
        follower.send_signal(signal.SIGINT)
        out, err = await asyncio.to_thread(follower.communicate, timeout=60)
        assert await run_cli("campaign", "cancel", "long") == 0
    assert follower.returncode == 130 and "Traceback" not in err, err
    assert err.strip().endswith("interrupted: stopped following campaign long; the campaign goes on: `podtax "
                                "campaign status long --follow` follows it again, `podtax campaign cancel long` "
                                "stops it"), err
