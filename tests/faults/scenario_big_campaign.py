"""Fault scenario "100,000-run campaign": a SIMULATED campaign of 100 nodes x 2 cells x 2 environments
x 250 repetitions is planned, runs, survives a SIGKILL of the runner at 30% (it resumes from its
per-run documents) and is cancelled at 80%. Expected: every planned run ends as exactly one result or
one recorded failure, or is recorded cancelled; none twice, none lost.

For the `make faults` suite: ``run(nodes, reps) -> dict(planned, results, failures, duplicates, lost)``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from podtax import natsserver

from tests.faults.drill import campaign_drill


async def scenario(nats_url: str, tmp: Path, nodes: int = 100, reps: int = 250) -> dict[str, Any]:
    return await campaign_drill(nats_url, tmp, nodes=nodes, reps=reps, combos=2, name="big",
                                kill_runner_at=0.3, cancel_at=0.8, timeout=900)


def run(nodes: int = 100, reps: int = 250) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="podtax-fault-") as tmp:
        server = natsserver.start(Path(tmp) / "jetstream", log_file=Path(tmp) / "nats.log")
        try:
            return asyncio.run(scenario(server.url, Path(tmp), nodes, reps))
        finally:
            server.stop()


if __name__ == "__main__":
    print(run(*map(int, sys.argv[1:3])))
