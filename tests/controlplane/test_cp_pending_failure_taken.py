"""A DELETE_REFUSED run whose failure NATS took, the runner stopped before it recorded the report (Runner.on_reported's
save; held here, and the outcome consumer with it, as a crash at that moment leaves them): the next runner sends the
failure its pending mark holds again (under the failure's fixed event id: NATS drops it as a duplicate), then the
result, and does not run the run again. Before (review rC, finding 2), it removed the mark ('... whose failure was not
recorded: removed, not sent') and ran the run again, which met 409 Conflict on its own claims left by the first
attempt (their deletes refused) and failed: the analyzer kept ('failed', []), the create and bind figures lost. Real
nats-server, kubesim (RBAC's 403 on delete), runner, parser, DuckDB analyzer."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from podtax_runner import handlers
from podtax_runner.controlplane import dispatch
from podtax_runner.controlplane.pending import SUFFIX
from podtax_runner.service import serve

from tests.controlplane.conftest import cluster
from tests.controlplane.test_cp_delete_refused_restart import QUERY
from tests.controlplane.test_cp_measured_retention import campaign, runner_settings, submit
from tests.integration.harness import services, wait_for


async def test_a_failure_nats_took_but_not_recorded_is_followed_by_its_result_not_run_again(
        nats_url: str, tmp_path: Path, kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="podtax.runner")
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    sim = kubesim_factory({**cluster(provision=0.01), "faults": {"forbid": ["delete persistentvolumeclaims"]}},
                          kubelet="none")
    spool = tmp_path / "spool"
    executed: list[int] = []
    real = dispatch.execute

    def counting(*args: Any, **kwargs: Any) -> Any:  # the real executor, counted
        executed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(dispatch, "execute", counting)
    hold = {"on": True, "hit": 0}
    real_on_reported, real_outcomes = handlers.Handlers.on_reported, handlers.Handlers.on_outcomes

    async def held(self: Any, run: Any) -> bool:
        if hold["on"]:
            hold["hit"] += 1
            await asyncio.Event().wait()  # the runner dies here: NATS took the failure, nothing recorded
        return await real_on_reported(self, run)

    async def outcomes_held(self: Any, batch: Any) -> Any:
        if hold["on"] and any(getattr(e.data, "reason", None) for e in batch):
            await asyncio.Event().wait()  # nor does its outcome consumer record the failure
        return await real_outcomes(self, batch)

    monkeypatch.setattr(handlers.Handlers, "on_reported", held)
    monkeypatch.setattr(handlers.Handlers, "on_outcomes", outcomes_held)
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        await s.start("runner", serve, runner_settings(s, sim, spool))
        await submit(tmp_path, campaign("cp-late", 20))
        await wait_for(lambda: hold["hit"], 90, "the failure published")
        await s.crash(next(t for t in s.tasks if t.get_name() == "runner"))
        mark, = (p for p in (spool / "measured").iterdir() if p.name.endswith(SUFFIX))
        hold["on"] = False
        caplog.clear()
        await s.start("runner", serve, runner_settings(s, sim, spool))
        await wait_for(lambda: "resumed 1 campaigns" in caplog.text, 30, "the runner resumed")
        await s.parser()  # the failure's outcome comes back only now, as after a real crash
        await wait_for(lambda: "campaign cp-late finished" in caplog.text, 90, "the campaign finished")
        await wait_for(lambda: [r[0] for r in s.query(QUERY)] == ["ok"], 60, "the DELETE_REFUSED result stored")
        (_, flags), = s.query(QUERY)
        await wait_for(lambda: not mark.exists(), 30, "the mark gone")
    assert any(f.startswith("DELETE_REFUSED: ") for f in flags), flags
    assert len(executed) == 1, caplog.text  # not run again
    assert "409 Conflict" not in caplog.text and "removed, not sent" not in caplog.text, caplog.text
