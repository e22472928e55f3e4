"""`podtax-host-agent`: runs on the host (as root on real nodes); see `podtax-host-agent --help`."""

from __future__ import annotations

import sys

from podtax.config import ConfigError, HostAgentSettings
from podtax.service import run_service

from podtax_host_agent import owndir
from podtax_host_agent.natsid import user_problem
from podtax_host_agent.service import serve


def prepare(settings: HostAgentSettings) -> None:
    """Before NATS: its NATS user must be its node's (exit 2 saying so), its directories safe (owndir.prepare)."""
    if why := user_problem(settings):
        raise ConfigError(why)
    owndir.prepare(settings)


def main(argv: list[str] | None = None) -> int:
    return run_service("host-agent", HostAgentSettings, serve, argv, prepare)


def run() -> None:
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
