"""`podtax-runner`: plans and drives campaigns; see `podtax-runner --help`."""

from __future__ import annotations

import sys

from podtax.config import RunnerSettings
from podtax.service import run_service

from podtax_runner.service import serve


def main(argv: list[str] | None = None) -> int:
    return run_service("runner", RunnerSettings, serve, argv)


def run() -> None:
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
