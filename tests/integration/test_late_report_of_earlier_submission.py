"""A report of a campaign's EARLIER submission that NATS delivers after the campaign was submitted again under its
name (after a NATS reset: the runner's KV, which refuses a name it holds, is gone; the analyzer's DuckDB is not). Run
ids are made of the campaign's name, cell, env and repetition, so both submissions plan the same run ids. Before, the
late report (a host agent that finished the earlier run late, a kept or outbox copy) was taken as the new
submission's run: the runner counted the run done (never measuring it in the new submission) and the analyzer stored
the earlier measurement under the run id, then dropped the new submission's own result of it ('the first result of
a run wins'): a number of another submission stored as measured in this one. Now the runner stamps each run it sends
with its campaign's submission (the time of the campaign.submitted event, RunSpec.submitted), executors echo it in
their reports, and the runner and the analyzer leave a report of another (earlier) submission out, each in one line
naming it; a report without the stamp (an older agent) is taken as before.

Real nats-servers (a second, empty one stands for the reset store), the real runner, parser and analyzer in this
process, real sysbench for both submissions' logs; the late log is published as the host agent built it."""

from __future__ import annotations

import asyncio
import logging
import subprocess
from pathlib import Path

import nats
import pytest
from podtax import events, natsserver, subjects, templates
from podtax.bus import Bus

from tests.integration.harness import event_data, services, wait_for
from tests.integration.test_submit import know_node

NODE = "n1"
SPEC = {"name": "again", "nodes": [NODE], "environments": ["host"], "seed": 7, "timeout": 40,
        "tests": [{"test": "sysbench-cpu", "params": {"threads": 1, "max_prime": 2000, "events": 0, "time": 1}}],
        "repetitions": {"min": 2, "max": 2}}


async def submit(url: str) -> events.RunSpec:
    """Submit the campaign as `podtax campaign submit` does; the first run the runner sends (its request's run)."""
    nc = await nats.connect(url)
    bus = await Bus.connect(url, "test/cli")
    try:
        requests = await event_data(nc, f"{subjects.RUN_REQUESTED}.>")
        event = events.campaign_submitted(events.CampaignSubmitted(campaign="again", spec=SPEC))
        await bus.publish(event.model_copy(update={"id": "campaign.again"}))
        return events.RunSpec.model_validate((await asyncio.wait_for(requests.get(), 60))["run"])
    finally:
        await bus.close()
        await nc.close()


def measured(run: events.RunSpec, workdir: Path) -> events.RawLogV1:
    """The run's log as the host agent builds it: real sysbench with the run's parameters."""
    argv = templates.get(run.test).build_argv(run.params, str(workdir))
    started = events.now()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    ended = events.now()
    version = subprocess.run(["sysbench", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return events.raw_log(events.RawLog(run=run, stdout=out.stdout, stderr=out.stderr, exit_code=out.returncode,
                                        started_at=started, ended_at=ended, tool_version=version),
                          f"podtax/host-agent/{NODE}").model_copy(update={"id": run.event_id("log")})


async def run_status(url: str, run_id: str) -> str:
    bus = await Bus.connect(url, "test/status")
    try:
        doc = await Bus.kv_json(await bus.kv(subjects.RUNNER_BUCKET), f"run.again.{run_id}")
        return (doc or {}).get("status", "planned")
    finally:
        await bus.close()


async def test_a_report_of_the_earlier_submission_is_not_taken_as_the_new_ones(
        nats_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    await know_node(nats_url, NODE, host_agent=True)
    async with services(nats_url, tmp_path) as s:
        await s.runner()
        first = await submit(nats_url)
    late = measured(first, tmp_path)  # the earlier submission's run, measured; its log not in NATS before the reset

    reset = natsserver.start(tmp_path / "jetstream-after-reset", log_file=tmp_path / "nats-after-reset.log")
    try:
        await know_node(reset.url, NODE, host_agent=True)
        async with services(reset.url, tmp_path) as s:  # the same DuckDB file
            await s.analyzer()
            await s.parser()
            await s.runner()
            again = await submit(reset.url)
            assert again.run_id == first.run_id  # the same run id in both submissions
            bus = await Bus.connect(reset.url, "test/agent")
            try:
                with caplog.at_level(logging.INFO):
                    await bus.publish(late)  # the earlier submission's report, delivered now
                    row = f"SELECT status, started_at FROM runs WHERE run_id = '{first.run_id}'"
                    said = await wait_for(lambda: s.query(row) or [r.getMessage() for r in caplog.records
                                                                   if "earlier submission" in r.getMessage()],
                                          60, "the late report stored or left out")
                    assert not s.query(row), f"the earlier submission's log stored as the new one's run: {said}"
                    runner_said = await wait_for(lambda: [r.getMessage() for r in caplog.records if r.name ==
                                                          "podtax.runner" and "earlier submission" in r.getMessage()],
                                                 60, "the runner's line on the late report")
                    stored_said = await wait_for(lambda: sorted(
                        r.getMessage().split(" of run ")[0] for r in caplog.records if r.name ==
                        "podtax.analyzer.store" and f"of run {first.run_id} not stored: it is of an earlier "
                        "submission" in r.getMessage()) == ["podtax.run.log.v1", "podtax.run.result.v1"], 60,
                        "the analyzer's line on the late log and on its result")
                assert len(runner_said) == 1 and first.run_id in runner_said[0], runner_said
                assert stored_said and not s.query(row)  # neither the log (reparse would read it) nor its result
                assert await run_status(reset.url, first.run_id) == "dispatched"  # still to be measured

                own = measured(again, tmp_path)  # the new submission's own report is taken
                await bus.publish(own)
                stored = await wait_for(lambda: s.query(row), 60, "the new submission's result stored")
                assert stored[0][0] == "ok" and stored[0][1] == own.data.started_at, (stored, own.data.started_at)
                for _ in range(600):  # the runner counts it (its outcome consumer is its own)
                    if await run_status(reset.url, first.run_id) == "done":
                        break
                    await asyncio.sleep(0.1)
                assert await run_status(reset.url, first.run_id) == "done"
            finally:
                await bus.close()
    finally:
        reset.stop()
