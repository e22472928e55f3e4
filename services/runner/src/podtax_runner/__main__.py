"""`podtax-runner`: plans and drives campaigns; see `podtax-runner --help`."""

from __future__ import annotations

import sys

from podtax.config import RunnerSettings
from podtax.service import run_service

from podtax_runner.service import serve


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "volumes":  # `podtax volumes ...` runs here: the clean-up is the executor's code
        from podtax_runner.volumes_cli import main as volumes

        return volumes(argv[1:])
    return run_service("runner", RunnerSettings, serve, argv)


def run() -> None:
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
