"""`podtax results --campaign NAME` (and `imports-twice --campaign NAME`) of a campaign the analyzer has never seen says
"unknown campaign", exit 1, as report, export and compare do (it said "no results yet", exit 0). A real nats-server
and analyzer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from podtax import natsserver
from podtax.cli.main import main

from tests.integration.harness import services


@pytest.mark.parametrize(("command", "empty"), [
    ("results", "no results yet"),
    # imports-twice --campaign nosuch said "no imported run is stored twice in campaign nosuch", exit 0 (session 53):
    # a mistyped name read as a clean campaign
    ("imports-twice", "no imported run is stored twice"),
])
async def test_a_campaign_the_analyzer_never_saw_is_unknown(command: str, empty: str, nats_url: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port)
        for _ in range(100):  # the analyzer's HTTP API comes up
            if await asyncio.to_thread(main, [command]) == 0:
                break
            await asyncio.sleep(0.2)
        assert empty in capsys.readouterr().out
        assert await asyncio.to_thread(main, [command, "--campaign", "quik"]) == 1
        assert capsys.readouterr().err.strip() == (f"error: unknown campaign 'quik' (the analyzer at "
                                                   f"http://127.0.0.1:{port} has no run of it)")
