"""What a hostile run request can make the host agent (root on real hosts) do, outside-in: a real nats-server
with the permissions `podtax up` generates, the requests published as the runner (the one role that may), the
real Agent consuming them as the host agent. Each is refused with a reason the runner reads, nothing it names
is started, and the agent still runs a good request afterwards.

A network test's client used to connect wherever the request said (any address, any port from 1024): the host
agent could be told to flood any host. A host run's client now connects only to the server it starts on
loopback (host->host); only pod runs connect to a server the runner started."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from podtax import campaign, config, events, subjects
from podtax.bus import Bus
from podtax.busconsume import REASON_HEADER
from podtax_host_agent.service import Agent

from tests.integration.secured import connect, secured_fixture  # noqa: F401 - the fixture `secured`

NODE = "n1"
FAR = "203.0.113.7"  # TEST-NET-3: nobody's host


@pytest.fixture
async def agent_and_runner(secured, tmp_path: Path) -> AsyncIterator[tuple[Agent, Bus]]:  # type: ignore[no-untyped-def]
    server, users = secured
    runner, bus = await connect(server, users, "runner"), await connect(server, users, "host_agent")
    await runner.ensure_streams(10 * 2**20, 3600)
    settings = config.load(config.HostAgentSettings, nats_url=server.url, agent_node=NODE,
                           agent_workdir=tmp_path / "work", agent_state_dir=tmp_path / "state")
    agent = Agent(settings, bus)
    await agent.refresh_facts()
    stop = asyncio.Event()
    consumer = asyncio.create_task(bus.consume(agent.consumer(), agent.handle, stop))
    yield agent, runner
    stop.set()
    await consumer
    await bus.close()
    await runner.close()


def _request(run_id: str, test: str, params: dict[str, Any], **run: Any) -> bytes:
    spec = {"run_id": run_id, "campaign": "c", "node": NODE, "env": "host", "test": test, "params": params,
            "timeout_s": 20, **run}
    return json.dumps({"id": f"{run_id}.req", "type": "podtax.run.requested.v1", "source": "test",
                       "time": events.now().isoformat(), "subject": f"{subjects.RUN_REQUESTED}.host.{NODE}",
                       "data": {"run": spec}}).encode()


async def _outcome(runner: Bus, run_id: str) -> dict[str, Any]:
    """The agent's answer to run_id: its refusal, its log, or the dead letter (reason header)."""
    sub = await runner.js.subscribe(f"podtax.*.*.host.{NODE}", ordered_consumer=True, stream=subjects.STREAM)
    dead = await runner.js.subscribe(f"{subjects.DLQ_PREFIX}.>", ordered_consumer=True, stream=subjects.DLQ_STREAM)
    try:
        for _ in range(200):
            for s, kind in ((sub, "event"), (dead, "dead")):
                try:
                    msg = await s.next_msg(timeout=0.1)
                except TimeoutError:
                    continue
                if kind == "dead" and run_id.encode() in msg.data:
                    return {"type": "dead", "reason": msg.headers[REASON_HEADER]}
                doc = json.loads(msg.data)
                if doc["type"] != "podtax.run.requested.v1" and doc["data"]["run"]["run_id"] == run_id:
                    return {"type": doc["type"], **doc["data"]}
        raise AssertionError(f"no answer to {run_id}")
    finally:
        await sub.unsubscribe()
        await dead.unsubscribe()


HOSTILE = [  # (test, params, run fields, the refusal's reason)
    ("iperf3", {"server": FAR, "port": 1024, "duration": 3600, "parallel": 128}, {}, "bad-target"),
    ("iperf3", {"server": "127.1", "port": 22}, {}, "invalid-params"),  # a privileged port
    ("iperf3", {"server": "0.0.0.0", "protocol": "udp", "bitrate": "1000G"}, {}, "bad-target"),  # this host
    ("sockperf", {"server": "::ffff:127.0.0.1"}, {}, "bad-target"),
    ("rm", {"args": "-rf /"}, {}, "unknown-template"),
    ("stress-ng-cpu", {"method": "all; touch {canary}"}, {}, "invalid-params"),
    ("sysbench-cpu", {"threads": "$(touch {canary})"}, {}, "invalid-params"),
    ("hdparm", {"device": "/dev/../etc/shadow"}, {}, "invalid-params"),
    ("hdparm", {"device": "/dev/null"}, {}, "bad-device"),
    ("fio", {"size": "١٠M"}, {}, "invalid-params"),  # Arabic-Indic digits: int() would read them
    ("sysbench-cpu", {"threads": -1}, {}, "invalid-params"),
    ("sysbench-cpu", {"threads": 10**12}, {}, "invalid-params"),
    ("sysbench-cpu", {"events": 0, "time": 0}, {}, "invalid-params"),
    ("sysbench-cpu", {}, {"timeout_s": 10**9}, "schema-invalid"),
    ("sysbench-cpu", {}, {"node": "n2"}, "misplaced"),
    ("sysbench-cpu", {"k" * 65: 1}, {}, "schema-invalid"),
]


async def test_hostile_run_requests_are_refused_and_start_nothing(agent_and_runner: tuple[Agent, Bus],
                                                                  tmp_path: Path) -> None:
    _, runner = agent_and_runner
    canary = tmp_path / "canary"
    for i, (test, params, run, reason) in enumerate(HOSTILE):
        params = {k: v.replace("{canary}", str(canary)) if isinstance(v, str) else v for k, v in params.items()}
        run_id = f"hostile-{i}"
        await runner.js.publish(f"{subjects.RUN_REQUESTED}.host.{NODE}", _request(run_id, test, params, **run))
        got = await _outcome(runner, run_id)
        if reason in ("schema-invalid", "misplaced"):
            assert got["type"] == "dead" and got["reason"].startswith(reason), (test, params, got)
        else:
            assert got["type"] == "podtax.run.failed.v1" and got["reason"] == reason, (test, params, got)
        assert not canary.exists()
    # ... and the agent still runs what it should
    await runner.js.publish(f"{subjects.RUN_REQUESTED}.host.{NODE}",
                            _request("good-1", "sysbench-cpu", {"threads": 1, "events": 10, "time": 1}))
    got = await _outcome(runner, "good-1")
    assert got["type"] == "podtax.run.log.v1" and got["exit_code"] == 0, got


def test_the_refusal_names_the_fix() -> None:
    from podtax_host_agent.execute import target_problem

    run = events.RunSpec(run_id="r", campaign="c", node=NODE, env="host", test="iperf3", params={"server": FAR})
    assert "drop `server` from the campaign's iperf3 parameters" in (target_problem(run) or "")
    assert target_problem(run.model_copy(update={"params": {"server": "::1"}})) is None


def test_a_campaign_cannot_aim_a_network_test_elsewhere() -> None:
    doc = ("name: n\nnodes: [n1]\nenvironments: [host, kubernetes]\ntests:\n  - test: iperf3\n"
           f"    params: {{server: {FAR}}}\n")
    with pytest.raises(campaign.CampaignError,
                       match=f"tests.0.params.server: '{FAR}' is not 127.0.0.1 or ::1.*drop server"):
        campaign.parse(doc)
    assert campaign.parse(doc.replace(FAR, "'::1'")).tests[0].params == {"server": "::1"}
