"""Two `podtax campaign submit` of one name at once, or another publisher, between submit's check of NATS
(cli/earlier.unplanned: no submission of the name the runner has not planned) and its publish. Both passed the check:
both were published (the runner plans the first and ignores the second, the analyzer takes the last as current and
leaves out every report of the runs that ran), or, under the one message id campaign.<name> within JetStream's 120 s
window, the second was dropped by NATS and its submit still said 'submitted' (its file never ran). Now the publish
expects the subject's last message to be the one the check saw (Nats-Expected-Last-Subject-Sequence): the second is
refused in one line, exit 2. Real nats-server, real CLI processes' code; the other publisher is placed between the
check and the publish by wrapping submit's next step (its analyzer check), the only way to order a race."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml
from podtax import events, subjects
from podtax.bus import Bus
from podtax.cli import campaign as campaign_cli
from podtax.cli.main import main as cli

from tests.integration.test_submit import GOOD, know_node
from tests.integration.test_submit_unplanned import submissions


async def held_spec(url: str) -> dict[str, Any]:
    nc = await nats.connect(url)
    try:
        msg = await nc.jetstream().get_last_msg(subjects.STREAM, subjects.join(subjects.CAMPAIGN_SUBMITTED, "sub"))
        return json.loads(msg.data)["data"]["spec"]
    finally:
        await nc.close()


def files(tmp_path: Path) -> tuple[Path, Path]:
    mine, theirs = tmp_path / "mine.yaml", tmp_path / "theirs.yaml"
    mine.write_text(yaml.safe_dump({**GOOD, "seed": 1}))
    theirs.write_text(yaml.safe_dump({**GOOD, "seed": 2}))
    return mine, theirs


async def test_a_second_submit_at_once_is_refused(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    await know_node(nats_url, "n1", host_agent=True)
    mine, theirs = files(tmp_path)
    real, other = campaign_cli.check_analyzer, []

    async def racing(*args: Any, **kwargs: Any) -> None:  # this submit has checked NATS: another one runs whole
        if not other:
            other.append(None)
            other[0] = await asyncio.to_thread(cli, ["campaign", "submit", str(theirs)])
        return await real(*args, **kwargs)

    monkeypatch.setattr(campaign_cli, "check_analyzer", racing)
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(mine)]) == 2
    assert other == [0]
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    said = " ".join(lines[-1].split())
    assert "campaign 'sub' was submitted by another publisher" in said and "nothing was submitted" in said, lines
    assert "podtax campaign status sub --follow" in " ".join(" ".join(lines).split()), lines
    assert await submissions(nats_url) == 1 and (await held_spec(nats_url))["seed"] == 2  # theirs, as it said


async def test_another_publisher_between_check_and_publish_is_not_published_beside(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    await know_node(nats_url, "n1", host_agent=True)
    mine, _ = files(tmp_path)
    real = campaign_cli.check_analyzer

    async def racing(*args: Any, **kwargs: Any) -> None:
        bus = await Bus.connect(nats_url, "test/other")
        try:  # as another tool, or a podtax of before, publishes it: no expectation of the subject
            await bus.publish(events.campaign_submitted(events.CampaignSubmitted(campaign="sub", spec={**GOOD,
                                                                                                    "seed": 3})))
        finally:
            await bus.close()
        return await real(*args, **kwargs)

    monkeypatch.setattr(campaign_cli, "check_analyzer", racing)
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(mine)]) == 2
    assert "was submitted by another publisher" in " ".join(capsys.readouterr().err.split())
    assert await submissions(nats_url) == 1 and (await held_spec(nats_url))["seed"] == 3
