"""A pod run's log that NATS refuses because the events stream is full (its size limit, PODTAX_NATS_STREAM_MAX_BYTES;
discard new). Before, the runner's outbox sent it again every 10 s for ever with a warning that read as an outage
('NATS stopped or restarting?'), the run held in flight and the campaign 'running' without a word of why: `podtax
campaign status` showed 0 done, 1 left, however long. Now the runner says in an error which limit refused it and
what to raise, writes why in the campaign's state (`podtax campaign status` prints it), keeps the log and sends it
again: once an admin raises the limit, the measured log is stored (one result, not run again) and the campaign ends.
Real nats-server, runner, KubeExecutor, parser, analyzer, CLI; kubesim's simulated kubelet."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from podtax import natsserver, subjects
from podtax.bus import Bus
from podtax.cli.main import main as cli
from podtax_runner.kube import KubeExecutor

from tests.controlplane.conftest import NODE, cluster, start_and_submit
from tests.controlplane.test_cp_publish_nats_down import QUERY, finished_status, runner_said
from tests.integration.harness import services, wait_for

CAMPAIGN = {"name": "pod-stream-full", "nodes": [NODE], "environments": ["kubernetes"],
            "tests": [{"test": "sysbench-cpu", "params": {"max_prime": 2000, "events": 100, "threads": 1}}],
            "repetitions": {"min": 1, "max": 1}, "timeout": 20, "seed": 1,
            "pod": {"image": "ghcr.io/podtax/bench:0.1.0"}}
FILLER = "podtax.filler.x"  # in the events stream (podtax.>), read by nobody


async def fill(bus: Bus) -> int:
    """Publish filler until the events stream refuses it (maximum bytes exceeded): how many it took."""
    from nats.js.errors import APIError

    for n in range(10_000):
        try:
            await bus.js.publish(FILLER, b"x" * 1_000)
        except APIError as exc:
            assert "maximum bytes exceeded" in (exc.description or ""), exc
            return n
    raise AssertionError("the events stream took 10 MB of filler: no size limit")


async def header(bus: Bus) -> dict[str, Any]:
    kv = await bus.kv(subjects.RUNNER_BUCKET)
    return await Bus.kv_json(kv, f"campaign.{CAMPAIGN['name']}") or {}


async def test_a_log_refused_by_a_full_stream_is_held_said_and_stored_once_there_is_room(
        nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    sim = kubesim_factory(cluster(provision=0.02, delete=0.02), kubelet="simulated", sim_duration=1.0)
    measured, full = threading.Event(), threading.Event()
    real = KubeExecutor._logs

    def logs_once_the_stream_is_full(self: KubeExecutor, *args: Any) -> str:  # in the executor's thread
        text = real(self, *args)
        measured.set()
        assert full.wait(60), "the test never filled the stream"
        return text

    monkeypatch.setattr(KubeExecutor, "_logs", logs_once_the_stream_is_full)
    bus = await Bus.connect(nats_server.url, "test")
    try:
        await bus.ensure_streams(max_bytes=200_000)  # made before the services: theirs find it
        with caplog.at_level(logging.INFO):
            async with services(nats_server.url, tmp_path) as s:
                await start_and_submit(s, tmp_path, [CAMPAIGN], runner_kubeconfig=sim.kubeconfig,
                                       runner_report_grace_s=1.0)
                await wait_for(measured.is_set, 60, "the run's pod done and its log read")
                assert await fill(bus) > 0
                full.set()
                held: dict[str, str] = {}

                async def the_held_reason() -> bool:
                    held.update((await header(bus)).get("held", {}))
                    return bool(held)

                await wait_for_async(the_held_reason, 60, "the campaign's state saying why the run is held")
                [(run_id, why)] = held.items()
                assert why.startswith("NATS refuses its log: JetStream refused the events: its stream is full "
                                      "(maximum bytes exceeded)"), why
                assert "PODTAX_NATS_STREAM_MAX_BYTES" in why and "nats stream edit PODTAX --max-bytes" in why, why
                capsys.readouterr()
                await asyncio.to_thread(cli, ["campaign", "status", CAMPAIGN["name"]])
                status = capsys.readouterr()
                assert f"held: run {run_id}: NATS refuses its log: JetStream refused the events: its stream is " \
                       "full" in " ".join(status.err.split()), status
                assert "running" in status.out, status
                # the runner's error names the limit once, not a warning of an outage every 10 s
                errors = [m for m in runner_said(caplog, logging.ERROR) if "NATS refuses its log" in m]
                assert errors and "sent again every 10 s until NATS takes it" in errors[0], errors
                assert not any("NATS stopped or restarting?" in m for m in runner_said(caplog)), runner_said(caplog)
                info = await bus.js.stream_info(subjects.STREAM)  # an admin raises the limit
                info.config.max_bytes = 10_000_000
                await bus.js.update_stream(info.config)
                status_out = await finished_status(capsys, CAMPAIGN["name"], 120)
                rows = s.query(QUERY, [CAMPAIGN["name"]])
                assert "held" not in await header(bus), await header(bus)
    finally:
        await bus.close()
    # the simulated kubelet's log is empty: the parser stores it as failed ('empty'), a result all the same
    assert [r[0] for r in rows] == [1] and rows[0][2] != "no-report", f"the log stored once, not run again: {rows}"
    assert "no-report" not in status_out and "0 left" in status_out, status_out


async def wait_for_async(predicate: Any, timeout: float, what: str) -> None:
    """Poll the coroutine function `predicate` until it returns true, for `timeout` seconds at most."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        await asyncio.sleep(0.2)
