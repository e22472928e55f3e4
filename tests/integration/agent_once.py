"""One run request handled by the real host Agent against a real nats-server: what it publishes for it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
from podtax import config, events, subjects
from podtax.bus import Bus
from podtax_host_agent.service import Agent

NODE = "n1"


async def handle_once(nats_url: str, tmp_path: Path, workdir: Path, test: str, params: dict[str, Any], run_id: str,
                      after_start: Callable[[], None] | None = None) -> tuple[list[dict], list[dict]]:
    """The logs and the refusals (their `data`) the Agent publishes for one request; `after_start` is called once
    the agent has read its host facts, before the request."""
    bus = await Bus.connect(nats_url, "test/agent")
    nc = await nats.connect(nats_url)
    logs: list[dict] = []
    failures: list[dict] = []

    async def on_msg(msg: Any) -> None:
        data = json.loads(msg.data)["data"]
        (logs if msg.subject.startswith(subjects.RUN_LOG) else failures).append(data)

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=on_msg)
    await nc.subscribe(f"{subjects.RUN_FAILED}.>", cb=on_msg)
    try:
        await bus.ensure_streams()
        settings = config.load(config.HostAgentSettings, nats_url=nats_url, agent_node=NODE, agent_workdir=workdir,
                               agent_state_dir=tmp_path / f"state-{run_id}")
        agent = Agent(settings, bus)
        await agent.refresh_facts()
        if after_start:
            after_start()
        run = events.RunSpec(run_id=run_id, campaign="c", node=NODE, env="host", test=test, params=params,
                             timeout_s=60)
        await agent.handle(events.run_requested(run, "test"))
        for _ in range(100):  # every caller's request ends in a log or a refusal: waited for (10 s at most), not
            if logs or failures:  # assumed in by the flush below (a CI run under load once saw neither)
                break
            await asyncio.sleep(0.1)
        await nc.flush()  # what the server sent before its answer is read: queued for the callbacks
        await nc.drain()  # and each callback run: close() dropped one still queued (a CI run's refusal went missing)
    finally:
        if not nc.is_closed:
            await nc.close()
        await bus.close()
    return logs, failures
