"""The host agent's executor: argv only, process-group kill on timeout, output cap, provenance."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from podtax import events, provenance
from podtax_host_agent import facts
from podtax_host_agent.execute import run_argv, run_template


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script = ("import os, subprocess, sys, time\n"
              f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
              "time.sleep(60)\n")
    out = await run_argv([sys.executable, "-c", script], timeout_s=1.0, cap_bytes=10_000, cwd=tmp_path)
    assert out.timed_out and out.exit_code is None
    child = int(marker.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        import time

        time.sleep(0.05)
    else:
        raise AssertionError("the grandchild survived the timeout")


async def test_output_is_capped_but_fully_drained(tmp_path: Path) -> None:
    script = "import sys; sys.stdout.write('x' * 300000); sys.stderr.write('y' * 300000)"
    out = await run_argv([sys.executable, "-c", script], timeout_s=20, cap_bytes=100_000, cwd=tmp_path)
    assert out.exit_code == 0 and out.truncated
    assert len(out.stdout) == 50_000 and len(out.stderr) == 50_000


async def test_no_shell_is_involved(tmp_path: Path) -> None:
    out = await run_argv(["echo", "$HOME; rm -rf /"], timeout_s=5, cap_bytes=10_000, cwd=tmp_path)
    assert out.stdout == "$HOME; rm -rf /\n"


async def test_real_sysbench_run_carries_the_provenance_block(tmp_path: Path) -> None:
    run = events.RunSpec(run_id="r", campaign="c", node="n", env="host", test="sysbench-cpu",
                         params={"threads": 1, "max_prime": 2000, "events": 100, "time": 5}, timeout_s=30)
    version = facts.tool_version(("sysbench", "--version"))
    out = await run_template(run, 100_000, tmp_path, version)
    assert out.exit_code == 0 and "events per second" in out.stdout
    _, phases = provenance.split(out.stderr)
    assert phases["before"]["tool_version"] == version
    assert "after" in phases


def test_facts_name_the_tools() -> None:
    f = facts.collect("n", "local")
    assert f.hw_threads >= 1 and f.kernel and f.arch
    assert "sysbench" in f.tool_versions
