"""`podtax import` of planted logs: a manifest of a campaign's host and kubernetes runs on one node, interleaved an
hour apart, and the real CLI importing such manifests into a real analyzer and parser."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from podtax import natsserver
from podtax.cli.main import main

from tests.integration.harness import services, wait_for

HEADER = "file,node,env,test,params,started_at,tool_version\n"
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log"
ENVS = ("host", "kubernetes")


def paired_manifest(folder: Path, name: str, *, test: str, params: str, month: int, runs: int,
                    log: Callable[[str, int], str], tool: str = "") -> Path:
    """``runs`` host and ``runs`` kubernetes logs of campaign ``name`` on node-1, run i of each on day i + 1 of
    ``month`` 2024 (host at 10:00, kubernetes at 11:00); ``log(env, i)`` is the text of that run's log. Returns
    the manifest's path, ``folder / f"{name}.csv"``."""
    rows = []
    for i in range(runs):
        for k, env in enumerate(ENVS):
            file = f"{name}-{env}-{i}.log"
            (folder / file).write_text(log(env, i))
            rows.append(f"{file},node-1,{env},{test},{params},2024-{month:02d}-{1 + i:02d}T{10 + k}:00:00Z,{tool}\n")
    path = folder / f"{name}.csv"
    path.write_text(HEADER + "".join(rows))
    return path


async def cli(*args: str) -> int:
    """The real CLI, in a thread (it runs an event loop of its own)."""
    return await asyncio.to_thread(main, list(args))


@contextlib.asynccontextmanager
async def imported(nats_url: str, folder: Path, manifests: dict[str, Path]) -> AsyncIterator[str]:
    """A real analyzer and parser on ``nats_url``, each manifest imported by `podtax import` as the campaign it is
    keyed by and every log parsed; yields the analyzer's URL. The caller sets PODTAX_NATS_URL for the CLI."""
    port = natsserver.free_port()
    runs = sum(len(path.read_text().splitlines()) - 1 for path in manifests.values())
    async with services(nats_url, folder) as s:
        await s.analyzer(port=port)
        await s.parser()
        for name, path in manifests.items():
            assert await cli("import", str(path), "--campaign", name) == 0
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE status = 'ok'")[0][0] == runs, 60,
                       "every planted log parsed")
        yield f"http://127.0.0.1:{port}"
