"""`podtax campaign submit` of a name NATS already holds a submission of that the runner has not planned yet (the
runner down or behind) is refused (review r1). The runner plans the first submission of a name and ignores the rest
as duplicates ('already planned; ignoring the duplicate submission'), while the analyzer takes the last one in NATS as
current and leaves out reports of the others: submitted again after JetStream's 120 s window for the same message id
(not de-duplicated), the analyzer dropped every report of the runs that ran. A name the runner refused can be
submitted again (it plans that one). Real nats-server; no runner running (it is down)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nats
import pytest
import yaml
from podtax import subjects
from podtax.bus import Bus
from podtax.cli.main import main as cli

from tests.integration.test_submit import GOOD, know_node


async def submissions(url: str) -> int:
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().stream_info(subjects.STREAM, subjects_filter=f"{subjects.CAMPAIGN_SUBMITTED}.>")
        return sum((info.state.subjects or {}).values())
    finally:
        await nc.close()


async def test_a_name_submitted_and_not_yet_planned_is_not_published_again(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    await know_node(nats_url, "n1", host_agent=True)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0
    capsys.readouterr()
    # again (the runner is down: its KV has no campaign.sub), e.g. minutes later, past the 120 s window
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "campaign 'sub' was already submitted at" in err and "the runner has not planned it yet" in err, err
    assert await asyncio.to_thread(cli, ["campaign", "submit", "--dry-run", str(path)]) == 2  # it would refuse
    assert await submissions(nats_url) == 1

    bus = await Bus.connect(nats_url, "test/runner")  # the runner refused the one held: a new one is planned
    try:
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        await kv.put("refused.sub", json.dumps({"reason": "campaign sub: unknown node(s) n9"}).encode())
    finally:
        await bus.close()
    capsys.readouterr()
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0, capsys.readouterr().err
    # published, not dropped by NATS as a duplicate of the refused one's message id (within 120 s it was, and the
    # submit still said 'submitted')
    assert await submissions(nats_url) == 2
