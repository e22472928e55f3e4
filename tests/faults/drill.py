"""Campaign drills for the fault suite: a SIMULATED campaign carried out by a real runner process.

The runner runs as a child process (`python -m podtax_runner`, PODTAX_RUNNER_SIMULATE=true: each
dispatched run gets a synthetic result at once, a new event per dispatch), so it can be SIGKILLed.
:func:`tally` then checks the one promise that matters: every planned run ends as exactly one result
or one recorded failure (cancelled runs are recorded in the runner's state), none twice, none lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import nats
import nats.js.errors
from nats.js.api import ConsumerConfig, DeliverPolicy
from podtax import events, subjects
from podtax.bus import Bus


def campaign_spec(name: str, nodes: list[str], reps: int, combos: int = 1, timeout: float = 5,
                  spacing: str = "back-to-back") -> dict[str, Any]:
    """A host+pod sysbench-cpu campaign: `combos` parameter sets x nodes x 2 environments x `reps`."""
    return {"name": name, "nodes": nodes, "environments": ["host", "kubernetes"],
            "tests": [{"test": "sysbench-cpu", "params": {"threads": 1},
                       "matrix": {"max_prime": [1000 + i for i in range(combos)]}}],
            "repetitions": {"min": reps, "max": reps}, "timeout": timeout, "seed": 7, "spacing": spacing}


async def seed_nodes(bus: Bus, nodes: list[str]) -> None:
    """Node facts as the host agents and the Kubernetes node list would leave them (the runner reads them)."""
    await bus.kv(subjects.RUNNER_BUCKET)
    await bus.kv_put_many(subjects.RUNNER_BUCKET, [
        (subjects.node_key(n), json.dumps({"node": n, "hw_threads": 4, "host_agent": True,
                                           "kubernetes": True}).encode()) for n in nodes])


async def submit(bus: Bus, spec: dict[str, Any]) -> None:
    event = events.campaign_submitted(events.CampaignSubmitted(campaign=spec["name"], spec=spec))
    await bus.publish(event.model_copy(update={"id": f"campaign.{spec['name']}"}))


async def cancel(bus: Bus, name: str) -> None:
    event = events.campaign_cancelled(events.CampaignCancelled(campaign=name))
    await bus.publish(event.model_copy(update={"id": f"campaign.{name}.cancel"}))


async def header(bus: Bus, name: str, attempts: int = 20) -> dict[str, Any] | None:
    """The campaign's header document; retried while NATS fails over (a server killed, a leader moving)."""
    for attempt in range(attempts):
        try:
            return await Bus.kv_json(await bus.kv(subjects.RUNNER_BUCKET), f"campaign.{name}")
        except (nats.errors.TimeoutError, nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError,
                nats.errors.ConnectionClosedError, TimeoutError):
            if attempt == attempts - 1:
                raise
            await asyncio.sleep(0.5)
    return None


def finished_runs(h: dict[str, Any] | None) -> int:
    if not h:
        return 0
    return sum(p.get(k, 0) for p in h.get("progress", {}).values() for k in ("done", "failed", "cancelled"))


async def wait_header(bus: Bus, name: str, ok: Any, timeout: float, what: str) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        h = await header(bus, name)
        if h and ok(h):
            return h
        await asyncio.sleep(0.25)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what} (last: {h and h.get('progress')})")


class RunnerProcess:
    """The runner as a child process (SIGKILL-able), SIMULATED execution, text logs in `log`."""

    def __init__(self, nats_url: str, log: Path, **env: str) -> None:
        self.env = {**os.environ, "PODTAX_NATS_URL": nats_url, "PODTAX_RUNNER_SIMULATE": "true",
                    "PODTAX_RUNNER_KUBERNETES": "false", "PODTAX_RUNNER_REPORT_GRACE_S": "10",
                    "PODTAX_LOG_FORMAT": "text", **env}
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "podtax_runner"], env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


async def _run_docs(nc: nats.NATS, name: str) -> dict[str, str]:
    """run id -> status, from the runner's per-run documents (what it planned, retries included)."""
    kv = await nc.jetstream().key_value(subjects.RUNNER_BUCKET)
    watcher = await kv.watch(f"run.{name}.*", ignore_deletes=True)
    out: dict[str, str] = {}
    try:
        while (entry := await watcher.updates(timeout=60)) is not None:
            doc = json.loads(entry.value)
            out[doc["run"]["run_id"]] = doc.get("status", "planned")
    finally:
        await watcher.stop()
    return out


async def outcome_events(nc: nats.NATS, name: str) -> Counter[tuple[str, str]]:
    """(run id, result|failure) -> how many such events the stream holds for campaign `name`."""
    js = nc.jetstream()
    sub = await js.pull_subscribe("", stream=subjects.STREAM, config=ConsumerConfig(
        filter_subjects=[f"{subjects.RUN_RESULT}.>", f"{subjects.RUN_FAILED}.>"],
        deliver_policy=DeliverPolicy.ALL, ack_policy="none", inactive_threshold=60))
    counts: Counter[tuple[str, str]] = Counter()
    try:
        pending = (await sub.consumer_info()).num_pending
        while pending > 0:
            with contextlib.suppress(nats.errors.TimeoutError):
                msgs = await sub.fetch(min(pending, 2000), timeout=5)
                pending -= len(msgs)
                for m in msgs:
                    run = json.loads(m.data)["data"]["run"]
                    if run["campaign"] == name:
                        counts[(run["run_id"], "result" if ".result." in m.subject else "failure")] += 1
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return counts


async def tally(nats_url: str, name: str) -> dict[str, Any]:
    """planned / results / failures / cancelled / duplicates / lost for campaign `name`."""
    nc = await nats.connect(servers=[u.strip() for u in nats_url.split(",")])
    try:
        runs = await _run_docs(nc, name)
        for _ in range(10):  # a KV watch just after a server restart can end before a lagging replica caught
            if runs:  # up (seen in CI: 0 documents read, a campaign of 800): read again, for up to 10 s
                break
            await asyncio.sleep(1)
            runs = await _run_docs(nc, name)
        outcomes = await outcome_events(nc, name)
    finally:
        await nc.close()
    per_run: Counter[str] = Counter()
    for (rid, _), n in outcomes.items():
        per_run[rid] += n
    cancelled = sum(1 for s in runs.values() if s == "cancelled")
    ended = {rid for rid in per_run if rid in runs}
    return {"planned": len(runs), "results": sum(n for (rid, k), n in outcomes.items() if k == "result"),
            "failures": sum(n for (rid, k), n in outcomes.items() if k == "failure"), "cancelled": cancelled,
            "duplicates": sum(n - 1 for n in per_run.values() if n > 1),
            "lost": len(runs) - cancelled - len(ended) + sum(1 for rid in ended if runs[rid] == "cancelled"),
            "unplanned": sum(1 for rid in per_run if rid not in runs),
            "in_flight": sum(1 for s in runs.values() if s == "dispatched")}


async def campaign_drill(nats_url: str, tmp: Path, *, nodes: int, reps: int, combos: int = 1,
                         name: str = "drill", spacing: str = "back-to-back", kill_runner_at: float | None = 0.3,
                         cancel_at: float | None = None, timeout: float = 600, restart_after: float = 0,
                         during: Any = None, before_tally: Any = None) -> dict[str, Any]:
    """Submit a SIMULATED campaign to a runner process; SIGKILL and restart the runner when `kill_runner_at`
    of the runs have ended (`restart_after` seconds later); call `during(fraction)` hooks; cancel at
    `cancel_at`; return the tally."""
    names = [f"sim-{i:03d}" for i in range(nodes)]
    bus = await Bus.connect(nats_url, "faults/drill")
    runner = RunnerProcess(nats_url, tmp / "runner.log")
    t0 = time.monotonic()
    marks: dict[str, float] = {}
    try:
        await bus.ensure_streams()
        await seed_nodes(bus, names)
        runner.start()
        spec = campaign_spec(name, names, reps, combos, spacing=spacing)
        await submit(bus, spec)
        h = await wait_header(bus, name, lambda h: True, timeout, "the campaign to be planned")
        total = h["runs"]
        marks["planned_s"] = time.monotonic() - t0
        if kill_runner_at is not None:
            await wait_header(bus, name, lambda h: finished_runs(h) >= kill_runner_at * total, timeout,
                              f"{kill_runner_at:.0%} of the runs")
            runner.kill()
            marks["killed_at_runs"] = finished_runs(await header(bus, name))
            await asyncio.sleep(restart_after)
            runner.start()
        if during is not None:
            await during(bus, name, total)
        if cancel_at is not None:
            await wait_header(bus, name, lambda h: finished_runs(h) >= cancel_at * total, timeout,
                              f"{cancel_at:.0%} of the runs")
            await cancel(bus, name)
        await wait_header(bus, name, lambda h: h.get("finished_at"), timeout, "the campaign to finish")
        marks["finished_s"] = time.monotonic() - t0
        if before_tally is not None:
            await before_tally()
    finally:
        runner.stop()
        await bus.close()
    out = await tally(nats_url, name)
    out.update({k: round(v, 1) for k, v in marks.items()})
    return out
