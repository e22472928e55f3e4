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


async def test_results_of_an_unknown_campaign(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port)
        for _ in range(100):  # the analyzer's HTTP API comes up
            if await asyncio.to_thread(main, ["results"]) == 0:
                break
            await asyncio.sleep(0.2)
        assert "no results yet" in capsys.readouterr().out
        assert await asyncio.to_thread(main, ["results", "--campaign", "quik"]) == 1
        assert capsys.readouterr().err.strip() == (f"error: unknown campaign 'quik' (the analyzer at "
                                                   f"http://127.0.0.1:{port} has no run of it)")


async def test_imports_twice_of_an_unknown_campaign(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`podtax imports-twice --campaign nosuch` said "no imported run is stored twice in campaign nosuch", exit 0
    (session 53): a mistyped name read as a clean campaign. Now as results: "unknown campaign", exit 1."""
    port = natsserver.free_port()
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{port}")
    async with services(nats_url, tmp_path) as s:
        await s.analyzer(port=port)
        for _ in range(100):  # the analyzer's HTTP API comes up
            if await asyncio.to_thread(main, ["imports-twice"]) == 0:
                break
            await asyncio.sleep(0.2)
        assert capsys.readouterr().out.strip() == "no imported run is stored twice"
        assert await asyncio.to_thread(main, ["imports-twice", "--campaign", "quik"]) == 1
        assert capsys.readouterr().err.strip() == (f"error: unknown campaign 'quik' (the analyzer at "
                                                   f"http://127.0.0.1:{port} has no run of it)")
