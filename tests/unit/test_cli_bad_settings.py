"""A bad PODTAX_NATS_URL or PODTAX_API_URL given to the CLI is one line naming the variable, and exit 2,
before anything is asked (run as `podtax`, the installed entry point). ConfigError is a SystemExit: it used
to end `podtax import` without a word, and inside asyncio (`podtax campaign ...`) in a 71-line "Task
exception was never retrieved"; a port above 65535 went on to nats-py's traceback, and a URL that is not
http(s) was "cannot reach the analyzer", exit 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PODTAX = str(Path(sys.executable).with_name("podtax"))
MANIFEST = ("file,node,env,test,params,started_at,tool_version\n"
            "run.log,n1,host,sysbench-cpu,threads=1,2025-01-01T00:00:00,\n")


def _podtax(argv: list[str], tmp_path: Path, **env: str) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    proc = subprocess.run([PODTAX, *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**clean, "PODTAX_DATA_DIR": str(tmp_path / "data"), "PODTAX_CLI_TIMEOUT": "5", **env})
    assert "Traceback" not in proc.stderr + proc.stdout and "never retrieved" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return proc.returncode, lines[0]


NATS_COMMANDS = [
    ["campaign", "status", "x"],
    ["campaign", "cancel", "x"],
    ["campaign", "submit", "{examples}/quick.yaml"],
    ["import", "{tmp}/m.csv", "--campaign", "x"],
]
NATS_URLS = [  # value, what the line says
    ("garbage", "must start with nats://"),
    ("", "is empty: unset it for the default nats://127.0.0.1:4222, or set a value (got '')"),
    ("nats://127.0.0.1:99999", "a port from 1 to 65535"),
    ("nats://127.0.0.1:0", "a port from 1 to 65535"),
    ("nats://:4222", "needs a host"),
]


NATS_CASES = [(NATS_COMMANDS[0], *case) for case in NATS_URLS] + [
    (argv, url, NATS_URLS[0][1] if url else NATS_URLS[1][1]) for argv in NATS_COMMANDS[1:] for url in ("garbage", "")]


@pytest.mark.parametrize(("argv", "url", "fragment"), NATS_CASES,
                         ids=[f"{' '.join(a[:2])} {u or 'empty'}" for a, u, _ in NATS_CASES])
def test_a_bad_nats_url_is_one_line_and_exit_2(argv: list[str], url: str, fragment: str, tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text(MANIFEST)
    (tmp_path / "run.log").write_text("sysbench 1.0.20\n")
    examples = Path(__file__).parents[2] / "examples" / "campaigns"
    code, line = _podtax([a.format(tmp=tmp_path, examples=examples) for a in argv], tmp_path, PODTAX_NATS_URL=url)
    assert code == 2
    assert line.startswith(f"error: PODTAX_NATS_URL: {url!r}" if url else "error: PODTAX_NATS_URL: is empty"), line
    assert fragment in line, line


def test_a_service_names_a_nats_port_out_of_range(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    proc = subprocess.run([sys.executable, "-m", "podtax_parser"], capture_output=True, text=True, timeout=60,
                          env={**env, "PODTAX_NATS_URL": "nats://127.0.0.1:99999"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "PODTAX_NATS_URL: 'nats://127.0.0.1:99999' needs a host and, if given, a port from 1 to 65535" in proc.stderr


API_COMMANDS = [["results"], ["scores"], ["report", "demo"], ["compare", "a", "b"],
                ["export", "demo", "--xlsx", "{tmp}/x.xlsx"], ["report", "demo", "--html", "{tmp}/x.html"]]
API_URLS = ["garbage", "ftp://x", "127.0.0.1:1", "http://127.0.0.1:99999", "http://127.0.0.1:0", "http://:80"]


API_CASES = [(API_COMMANDS[0], url) for url in API_URLS] + [(argv, "garbage") for argv in API_COMMANDS[1:]]


@pytest.mark.parametrize(("argv", "url"), API_CASES, ids=[f"{' '.join(a[:3])} {u}" for a, u in API_CASES])
def test_a_bad_api_url_is_one_line_and_exit_2(argv: list[str], url: str, tmp_path: Path) -> None:
    code, line = _podtax([a.format(tmp=tmp_path) for a in argv], tmp_path, PODTAX_API_URL=url)
    assert code == 2
    assert f"PODTAX_API_URL {url!r} is not an http(s) URL with a valid port" in line, line
    assert not list(tmp_path.glob("x.*"))


def test_a_bad_api_option_is_named_as_the_option(tmp_path: Path) -> None:
    code, line = _podtax(["report", "demo", "--api", "ftp://x"], tmp_path, PODTAX_API_URL="http://127.0.0.1:9")
    assert code == 2 and "--api 'ftp://x' is not an http(s) URL" in line, line


@pytest.mark.parametrize(("value", "fragment"), [("", "is empty: unset it for the default"),
                                                  ("abc", "unable to parse string as a number (got 'abc')")])
def test_a_bad_score_ttl_is_one_line_and_exit_2(value: str, fragment: str, tmp_path: Path) -> None:
    """`podtax scores` reads the scheduler's PODTAX_SCHEDULER_SCORE_TTL_S: a bad one was pydantic's traceback, exit 1
    (it built the settings itself, not through the CLI's ConfigError path); no analyzer is asked."""
    code, line = _podtax(["scores"], tmp_path, PODTAX_SCHEDULER_SCORE_TTL_S=value, PODTAX_API_URL="http://127.0.0.1:9")
    assert code == 2
    assert line.startswith("error: PODTAX_SCHEDULER_SCORE_TTL_S: ") and fragment in line, line
