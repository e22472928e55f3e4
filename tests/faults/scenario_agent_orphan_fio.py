"""Fault scenario "agent orphan, fio": as scenario_agent_orphan, with fio, whose job process calls
setsid() (outside the run's process group, no parent-death signal): the restarted agent must reap it.

For the `make faults` suite: ``run() -> dict(planned, results, failures, duplicates, lost)``.
"""

from __future__ import annotations

from typing import Any

from tests.faults import scenario_agent_orphan


def run() -> dict[str, Any]:
    return scenario_agent_orphan.run("fio")


if __name__ == "__main__":
    print(run())
