"""The launcher between the host agent and a benchmark (guard.dying_with_agent): the agent's forked child runs no
Python before exec (a CI run hung so: a forked child of the threaded agent deadlocked in its preexec_fn, and the
agent's event loop with it), and the tool still dies with the agent (test_agent_guard), sees the argv, environment
and signal dispositions it was given, and a missing tool is still FileNotFoundError."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from podtax_host_agent import guard
from podtax_host_agent.execute import run_argv


def test_the_agents_forked_child_runs_no_python(tmp_path: Path) -> None:
    """Python's at-fork hooks run in a forked child only when it runs Python before exec (a preexec_fn)."""
    flag = tmp_path / "python-ran-in-the-child"
    script = (
        "import asyncio, os, pathlib\n"
        "from podtax_host_agent.execute import run_argv\n"
        f"os.register_at_fork(after_in_child=lambda: pathlib.Path({str(flag)!r}).touch())\n"
        f"out = asyncio.run(run_argv(['true'], 20, 10_000, pathlib.Path({str(tmp_path)!r})))\n"
        "assert out.exit_code == 0, out\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert not flag.exists(), "Python ran in the agent's forked child before exec"


async def test_the_tool_gets_its_argv_and_environment(tmp_path: Path) -> None:
    script = "import json, os, sys; print(json.dumps(sys.argv[1:])); print(json.dumps(dict(os.environ)))"
    out = await run_argv([sys.executable, "-c", script, "a b", "$HOME"], 20, 100_000, tmp_path)
    assert out.exit_code == 0, out.stderr
    argv, env = out.stdout.splitlines()
    assert json.loads(argv) == ["a b", "$HOME"]
    assert sorted(json.loads(env)) == sorted(["PATH", "LC_ALL", guard.MARKER])
    assert json.loads(env)["LC_ALL"] == "C"


async def test_the_tool_ignores_no_signal(tmp_path: Path) -> None:
    """Python ignores SIGPIPE and SIGXFSZ from its start, and an ignored signal stays so across exec: the launcher
    gives the tool the defaults (a tool writing to a closed pipe dies of it, as from a shell)."""
    out = await run_argv(["grep", "^SigIgn:", "/proc/self/status"], 20, 10_000, tmp_path)
    assert out.exit_code == 0, out.stderr
    ignored = int(out.stdout.split()[1], 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
        assert not ignored & (1 << (sig - 1)), f"{sig.name} is ignored in the tool"


async def test_a_tools_argv0_is_its_own_name(tmp_path: Path) -> None:
    out = await run_argv(["sh", "-c", 'echo "$0"; cat /proc/$$/comm'], 20, 10_000, tmp_path)
    assert out.stdout.split() == ["sh", "sh"]


async def test_a_missing_tool_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-benchmark-tool"):
        await run_argv(["no-such-benchmark-tool", "--version"], 20, 10_000, tmp_path)


def test_a_launcher_whose_parent_is_not_the_agent_runs_nothing(tmp_path: Path) -> None:
    """Its parent gone before it asked for the signal (here: another process started it): exit 126, no tool."""
    flag = tmp_path / "ran"
    argv = guard.dying_with_agent(["touch", str(flag)], "/usr/bin:/bin")
    middle = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", middle, *argv], timeout=30)
    assert done.returncode == 126 and not flag.exists()


def test_an_agent_started_as_a_background_job_gives_its_tool_sigint_and_sigquit(tmp_path: Path) -> None:
    """A shell ignores SIGINT and SIGQUIT in a background job (`nohup podtax-host-agent &`), and an ignored signal
    stays so across exec: the tool kept them ignored (test_the_tool_ignores_no_signal failed when the suite itself ran
    in the background). Now the launcher gives the tool their defaults whatever the agent inherited."""
    script = (
        "import asyncio, pathlib, signal\n"
        "from podtax_host_agent.execute import run_argv\n"
        "for s in (signal.SIGINT, signal.SIGQUIT): signal.signal(s, signal.SIG_IGN)\n"
        "out = asyncio.run(run_argv(['grep', '^SigIgn:', '/proc/self/status'], 20, 10_000, "
        f"pathlib.Path({str(tmp_path)!r})))\n"
        "assert out.exit_code == 0, out\n"
        "print(out.stdout.split()[1])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    ignored = int(done.stdout.strip(), 16)
    for sig in (signal.SIGINT, signal.SIGQUIT):
        assert not ignored & (1 << (sig - 1)), f"{sig.name} is ignored in the tool"
