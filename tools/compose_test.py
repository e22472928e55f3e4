"""`make compose-test`: build the images, start docker-compose.yml, run the end-to-end campaign, stop.

Needs a Docker engine with the compose plugin; where none runs it says so and exits 1 (it is not
part of `make test`, which validates the compose file against the compose specification instead).
Steps: `docker compose --profile local-agent up -d --build --wait`, `podtax campaign submit
examples/campaigns/compose.yaml --follow` against the published NATS port, then every planned run
must have a stored result in the analyzer's API; `docker compose down -v` always runs at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "examples" / "campaigns" / "compose.yaml"
PROJECT = "podtax-compose-test"
EXPECTED_RUNS = 3


def engine_problem() -> str | None:
    """None when a Docker engine and the compose plugin answer; else what is missing."""
    if shutil.which("docker") is None:
        return "no docker command here"
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return "no Docker engine answers (`docker info` failed)"
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode != 0:
        return "the docker compose plugin is missing"
    return None


def compose(*args: str) -> list[str]:
    return ["docker", "compose", "-p", PROJECT, "-f", str(ROOT / "docker-compose.yml"), "--profile", "local-agent",
            *args]


def main(argv: list[str] | None = None) -> int:
    problem = engine_problem()
    if problem:
        print(f"compose-test: {problem}; it needs a machine with a Docker engine (it is not part of make test)",
              file=sys.stderr)
        return 1
    podtax = str(Path(sys.executable).with_name("podtax"))
    env = {**os.environ, "PODTAX_NATS_URL": "nats://127.0.0.1:4222", "PODTAX_API_URL": "http://127.0.0.1:8700"}
    try:
        subprocess.run(compose("up", "-d", "--build", "--wait"), check=True, cwd=ROOT)
        subprocess.run([podtax, "campaign", "submit", str(CAMPAIGN), "--follow"], check=True, env=env, timeout=900)
        deadline = time.monotonic() + 120
        rows: list[object] = []
        while time.monotonic() < deadline:
            url = f"{env['PODTAX_API_URL']}/api/results"
            rows = httpx.get(url, params={"campaign": "compose-e2e"}, timeout=10).json()
            if len(rows) >= EXPECTED_RUNS:
                break
            time.sleep(2)
        print(f"compose-test: {len(rows)} of {EXPECTED_RUNS} runs stored")
        return 0 if len(rows) == EXPECTED_RUNS else 1
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, httpx.HTTPError) as exc:
        print(f"compose-test failed: {exc}", file=sys.stderr)
        return 1
    finally:
        subprocess.run(compose("down", "-v"), cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
