"""A DELETE_REFUSED run whose failure NATS refused (the events stream full) and the runner kept in its bucket
(outbox.KEPT), the runner restarted before room was made: the next runner sends the kept failure instead of running
the run again, then the result its pending mark holds (ControlPlaneExecutor.send_pending, _resend). Before (review rC
(iii)), the starting runner took the mark for one of a run to run again and removed it ('is of a run whose failure was
not recorded: removed, not sent'), then sent the kept failure: the run stayed ('failed', []) in the analyzer, its
create and bind figures lost. Real nats-server (the events stream at 200 kB), kubesim (RBAC's 403 on delete), the
runner, parser and DuckDB analyzer; the run's executor waits until the stream is full, so its failure is refused."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from podtax import natsserver, subjects
from podtax.bus import Bus
from podtax_runner.controlplane import dispatch
from podtax_runner.controlplane.pending import SUFFIX
from podtax_runner.service import serve

from tests.controlplane.conftest import cluster
from tests.controlplane.test_cp_delete_refused_restart import QUERY
from tests.controlplane.test_cp_measured_retention import campaign, runner_settings, submit
from tests.integration.harness import services, wait_for
from tests.integration.test_runner_stream_full_held import fill, wait_for_async


async def test_a_kept_failure_sent_by_the_next_runner_is_followed_by_its_pending_result(
        nats_server: natsserver.NatsServer, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="podtax.runner")
    monkeypatch.setenv("PODTAX_NATS_URL", nats_server.url)
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {"forbid": ["delete persistentvolumeclaims"]}},
                          kubelet="none")
    spool = tmp_path / "spool"
    executed, full = [], threading.Event()
    real = dispatch.execute

    def execute_then_wait(*args: Any, **kwargs: Any) -> Any:  # the real executor; its report waits for a full stream
        try:
            return real(*args, **kwargs)
        finally:
            executed.append(1)
            assert full.wait(60)

    monkeypatch.setattr(dispatch, "execute", execute_then_wait)
    bus = await Bus.connect(nats_server.url, "test")
    try:
        await bus.ensure_streams(max_bytes=200_000)
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        async with services(nats_server.url, tmp_path) as s:
            await s.analyzer()
            await s.parser()
            await s.start("runner", serve, runner_settings(s, sim, spool))
            await submit(tmp_path, campaign("cp-late", 20))
            await wait_for(lambda: executed, 90, "the run executed")
            assert await fill(bus) > 0
            full.set()

            async def kept() -> bool:
                return bool(await Bus.kv_keys(kv, "held."))

            await wait_for_async(kept, 60, "the failure kept in the runner's bucket")
            await s.crash(next(t for t in s.tasks if t.get_name() == "runner"))
            mark, = (p for p in (spool / "measured").iterdir() if p.name.endswith(SUFFIX))
            info = await bus.js.stream_info(subjects.STREAM)
            info.config.max_bytes = 10_000_000  # room made
            await bus.js.update_stream(info.config)
            caplog.clear()
            await s.start("runner", serve, runner_settings(s, sim, spool))
            await wait_for(lambda: "campaign cp-late finished" in caplog.text, 90, "the campaign finished")
            await wait_for(lambda: [r[0] for r in s.query(QUERY)] == ["ok"], 60, "the DELETE_REFUSED result stored")
            (_, flags), = s.query(QUERY)
            await wait_for(lambda: not mark.exists(), 30, "the mark gone")
    finally:
        await bus.close()
    assert any(f.startswith("DELETE_REFUSED: ") for f in flags), flags
    assert len(executed) == 1  # not run again
    said = [r.getMessage() for r in caplog.records]
    failure = next(i for i, m in enumerate(said) if "its failure, kept by an earlier runner, was sent again" in m)
    result = next(i for i, m in enumerate(said) if "go as a result flagged DELETE_REFUSED" in m)
    assert failure < result, said  # the result after its failure: never counted before it
    assert not any("removed, not sent" in m for m in said), said
