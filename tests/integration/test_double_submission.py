"""A campaign name published twice before the runner planned it (the runner down; the second publish past
JetStream's 120 s window for the same message id, by a `podtax campaign submit` of before cli/earlier.unplanned, or
two at once). The runner plans the first and ignores the second, while the analyzer takes the second, the last in
NATS, as current and leaves out every report of the first (review r1). `podtax campaign submit` now refuses the
second (tests/integration/test_submit_unplanned.py); published all the same, the runner says so in one error line
naming the fix, instead of an info line. Real nats-server and runner; the events as the CLI publishes them."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import nats
import pytest
from podtax import events, subjects
from podtax.bus import Bus

from tests.integration.harness import event_data, services, wait_for
from tests.integration.test_late_report_of_earlier_submission import NODE, SPEC
from tests.integration.test_submit import know_node


async def test_a_second_submission_the_runner_ignores_is_said_with_its_fix(
        nats_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    await know_node(nats_url, NODE, host_agent=True)
    bus = await Bus.connect(nats_url, "test/cli")
    nc = await nats.connect(nats_url)
    try:
        requests = await event_data(nc, f"{subjects.RUN_REQUESTED}.>")
        first = events.campaign_submitted(events.CampaignSubmitted(campaign="again", spec=SPEC))
        await bus.publish(first.model_copy(update={"id": "campaign.again"}))
        second = events.campaign_submitted(events.CampaignSubmitted(campaign="again", spec=SPEC))
        assert second.time != first.time
        await bus.publish(second.model_copy(update={"id": "campaign.again.past-the-window"}))
        async with services(nats_url, tmp_path) as s:
            with caplog.at_level(logging.INFO, logger="podtax.runner"):
                await s.runner()
                run = events.RunSpec.model_validate((await asyncio.wait_for(requests.get(), 60))["run"])
                said = await wait_for(lambda: [r for r in caplog.records if "again" in r.getMessage() and
                                               "ignor" in r.getMessage()], 60, "the runner's line on the second")
        assert run.submitted == first.time  # the first is planned
        assert len(said) == 1 and said[0].levelno == logging.ERROR, [(r.levelname, r.getMessage()) for r in said]
        line = said[0].getMessage()
        assert f"its submission of {second.time.isoformat()} is ignored" in line, line
        assert "podtax campaign cancel again" in line and "under another name" in line, line
    finally:
        await bus.close()
        await nc.close()
