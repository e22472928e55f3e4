"""`podtax-host-agent`: runs on the host (as root on real nodes); see `podtax-host-agent --help`."""

from __future__ import annotations

import sys

from podtax.config import HostAgentSettings
from podtax.service import run_service

from podtax_host_agent.owndir import prepare
from podtax_host_agent.service import serve


def main(argv: list[str] | None = None) -> int:
    return run_service("host-agent", HostAgentSettings, serve, argv, prepare)


def run() -> None:
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
