"""A full campaign, host and pod, against the emulator in exec mode with real sysbench:
every planned run ends as a result or a recorded failure, host and pod runs on a node never
overlap, the order is interleaved, and a runner killed mid-campaign resumes without running
anything twice."""

from __future__ import annotations

import asyncio
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from podtax import subjects
from podtax.bus import Bus
from podtax.cli.main import main as cli
from podtax_kubesim.testing import start as start_kubesim

from tests.integration.harness import services, wait_for

NODE = "node-1"
CAMPAIGN = {
    "name": "e2e",
    "nodes": [NODE],
    "environments": ["host", "kubernetes"],
    "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 3000, "events": 400, "time": 20},
               "matrix": {"threads": [1, "all"]}}],
    "repetitions": {"min": 3, "max": 3},
    "pod": {"image": "ghcr.io/podtax/bench:0.1.0", "requests": {"cpu": "500m"}, "limits": {"cpu": "500m"}},
    "timeout": 60,
    "seed": 7,
}


async def kv_doc(bus: Bus, key: str) -> dict[str, Any] | None:
    """A document of the runner's bucket; a campaign's header gets its runs (one document per run) as `runs`."""
    kv = await bus.kv(subjects.RUNNER_BUCKET)
    doc = await Bus.kv_json(kv, key)
    if doc is not None and key.startswith("campaign."):
        watcher = await kv.watch(f"run.{doc['name']}.*")
        runs = {}
        while (entry := await watcher.updates(timeout=30)) is not None:
            run = json.loads(entry.value)
            runs[run["run"]["run_id"]] = run
        await watcher.stop()
        doc["runs"] = runs
    return doc


async def wait_for_node(bus: Bus) -> None:
    """Until the runner knows NODE from both its host agent and the emulator."""
    doc = None
    for _ in range(100):
        doc = await kv_doc(bus, subjects.node_key(NODE))
        if doc and doc.get("host_agent") and doc.get("kubernetes"):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"node {NODE} never known to the runner: {doc}")


@pytest.fixture
def sim(tmp_path: Path):  # type: ignore[no-untyped-def]
    s = start_kubesim({"nodes": [{"name": NODE, "arch": "amd64", "capacity": {"cpu": "2", "memory": "8Gi"}}]},
                      kubelet="exec", workdir=tmp_path / "kubesim")
    yield s
    s.stop()


async def run_campaign(nats_url: str, tmp_path: Path, sim: Any, monkeypatch: pytest.MonkeyPatch,
                       crash_after: int | None) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    nc = await nats.connect(nats_url)
    # core subscription: sees every publish, even de-duplicated ones. A runner restarted after a pod run's
    # log went out may publish that same log again (same event id, dropped by JetStream); a second
    # execution would have its own output (sysbench's timings), so executions are told apart by the log.
    published: defaultdict[str, set[str]] = defaultdict(set)

    async def count(msg: Any) -> None:
        data = json.loads(msg.data)["data"]
        published[data["run"]["run_id"]].add(data["stdout"])

    await nc.subscribe(f"{subjects.RUN_LOG}.>", cb=count)
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        await s.agent(node=NODE)
        runner = await s.runner(kubeconfig=sim.kubeconfig)
        bus = await Bus.connect(nats_url, "test")
        await wait_for_node(bus)
        path = tmp_path / "campaign.yaml"
        path.write_text(yaml.safe_dump(CAMPAIGN))
        assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0
        if crash_after is not None:
            for _ in range(600):
                state = await kv_doc(bus, "campaign.e2e")
                done = sum(r.get("status") in ("done", "failed") for r in (state or {}).get("runs", {}).values())
                if done >= crash_after:
                    break
                await asyncio.sleep(0.2)
            await s.crash(runner)
            await asyncio.sleep(1)
            await s.runner(kubeconfig=sim.kubeconfig)
        for _ in range(1200):
            state = await kv_doc(bus, "campaign.e2e")
            if state and state.get("finished_at"):
                break
            await asyncio.sleep(0.25)
        else:
            raise AssertionError("campaign did not finish")
        await wait_for(lambda: s.query("SELECT count(*) FROM runs WHERE campaign='e2e'")[0][0] >= 12, 30, "rows")
        check_campaign(state, s.query("SELECT run_id, env, status, failure_reason FROM runs WHERE campaign='e2e'"))
        twice = {run_id: len(logs) for run_id, logs in published.items() if len(logs) > 1}
        assert not twice, f"runs executed more than once: {twice}"
        assert len(published) == 12
        pods = s.query("SELECT count(*), count(DISTINCT run_id) FROM raw_logs WHERE env='kubernetes'")
        assert pods == [(6, 6)]
        assert await asyncio.to_thread(cli, ["campaign", "status", "e2e"]) == 0
        throttled = s.query("SELECT max(nr_throttled) FROM runs WHERE env='kubernetes' AND status='ok'")[0][0]
        print("pod runs throttled periods (max):", throttled)
        await bus.close()
    await nc.close()


def check_campaign(state: dict[str, Any], rows: list[tuple[Any, ...]]) -> None:
    runs = state["runs"]
    assert len(runs) == 12
    assert all(r["status"] in ("done", "failed") for r in runs.values())
    assert {r[0] for r in rows} == set(runs), "every planned run ends as a result or a recorded failure"
    failures = [r for r in rows if r[2] != "ok"]
    assert not failures, failures
    # never two runs at once on the node, across environments (the runner's dispatch/finish times)
    spans = sorted((r["dispatched_at"], r["finished_at"]) for r in runs.values())
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, f"overlap: a run started at {start} before the previous ended at {end}"
    # interleaved: within each cell, host and pod counts never drift apart by more than one
    by_cell: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for r in runs.values():
        run = r["run"]
        by_cell[json.dumps(run["params"], sort_keys=True)].append((run.get("sequence", 0), run["env"]))
    for seq in by_cell.values():
        balance = 0
        for _, env in sorted(seq):
            balance += 1 if env == "host" else -1
            assert abs(balance) <= 1, f"not interleaved: {sorted(seq)}"


@pytest.mark.slow
async def test_campaign_host_and_pod_end_to_end(nats_url: str, tmp_path: Path, sim: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    await run_campaign(nats_url, tmp_path, sim, monkeypatch, crash_after=None)


@pytest.mark.slow
async def test_target_ci_width_extends_cells_up_to_the_maximum(nats_url: str, tmp_path: Path, sim: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The analyzer publishes each cell's statistics; the runner adds runs while the CI is too wide."""
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    doc = {**CAMPAIGN, "name": "adaptive",
           "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 2000, "events": 200, "time": 20, "threads": 1}}],
           "repetitions": {"min": 3, "max": 5, "target_ci_width": 0.000001}}
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.parser()
        await s.agent(node=NODE)
        await s.runner(kubeconfig=sim.kubeconfig)
        bus = await Bus.connect(nats_url, "test")
        await wait_for_node(bus)
        path = tmp_path / "adaptive.yaml"
        path.write_text(yaml.safe_dump(doc))
        assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0
        for _ in range(1200):
            state = await kv_doc(bus, "campaign.adaptive")
            if state and state.get("finished_at") and len(state["runs"]) >= 10:
                break
            await asyncio.sleep(0.25)
        else:
            raise AssertionError(f"the cell was not extended to its maximum: {state and len(state['runs'])} runs")
        assert len(state["runs"]) == 10, "3 planned + 2 added repetitions, per environment"
        assert Counter(r["run"]["env"] for r in state["runs"].values()) == {"host": 5, "kubernetes": 5}
        await bus.close()


@pytest.mark.slow
async def test_runner_killed_mid_campaign_resumes_without_running_twice(
        nats_url: str, tmp_path: Path, sim: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    await run_campaign(nats_url, tmp_path, sim, monkeypatch, crash_after=4)
