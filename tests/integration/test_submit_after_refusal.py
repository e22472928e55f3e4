"""A name the runner refused may be submitted again (it plans that one), but only once while the runner has not planned
it: the runner's record of a refusal (KV refused.<name>) held a reason and no time, so `podtax campaign submit` could
not tell which submission was refused and let a third one go while the second was still unplanned (the runner down):
the runner plans the second and ignores the third, the analyzer takes the third as current and leaves out every report
of the runs that ran. Now the record names the submission refused (its campaign.submitted time) and submit compares it
with the last one NATS holds (events.same_submission). A record without it (an older runner) lets the name go, as
before (tests/integration/test_submit_unplanned.py). Real nats-server, real runner, real CLI."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path

import nats
import pytest
import yaml
from podtax import events, subjects
from podtax.bus import Bus
from podtax.cli import earlier
from podtax.cli.main import main as cli

from tests.integration.harness import services
from tests.integration.test_submit import GOOD, know_node
from tests.integration.test_submit_unplanned import submissions


async def refused_record(bus: Bus) -> dict:
    kv = await bus.kv(subjects.RUNNER_BUCKET)
    for _ in range(600):
        if (doc := await Bus.kv_json(kv, "refused.sub")) is not None:
            return doc
        await asyncio.sleep(0.1)
    raise AssertionError("the runner recorded no refusal of campaign sub within 60 s")


async def test_a_third_submission_while_the_second_is_unplanned_is_refused(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    await know_node(nats_url, "n1", host_agent=True)
    bus = await Bus.connect(nats_url, "test/other")
    try:  # a first submission the runner refuses (its spec names no nodes)
        first = events.campaign_submitted(events.CampaignSubmitted(campaign="sub", spec={"name": "sub"}))
        await bus.publish(first)
        async with services(nats_url, tmp_path) as s:
            await s.runner()
            doc = await refused_record(bus)
        # the runner is down from here on
        assert doc.get("reason") and "submitted" in doc, doc
        assert events.utc(datetime.fromisoformat(doc["submitted"])) == events.utc(first.time), doc
        assert doc.get("seq") == 1, doc  # the stream sequence of the one refused
    finally:
        await bus.close()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    capsys.readouterr()
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0, capsys.readouterr().err  # refused
    assert await submissions(nats_url) == 2
    capsys.readouterr()  # the refusal is of the first, not of this one: campaign status does not say it is
    assert await asyncio.to_thread(cli, ["campaign", "status", "sub", "--follow", "--timeout", "1"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "refused" not in err and "no campaign named 'sub'" in err and "is the runner running?" in err, err
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 2  # the second is not planned yet
    err = " ".join(capsys.readouterr().err.split())
    assert "campaign 'sub' was already submitted at" in err and "the runner has not planned it yet" in err, err
    assert await submissions(nats_url) == 2



async def test_a_refusal_from_before_the_stream_was_made_again_is_not_of_a_new_submission(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """The PODTAX stream deleted and made again by hand (the runner's KV kept) starts its sequences again: the record
    of a refusal from before (seq 1) named a new, unplanned submission stored at seq 1 too, so submit let a third one go
    and campaign status showed the old reason (review r4). The held message carrying a time and the record naming one,
    both must match."""
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    await know_node(nats_url, "n1", host_agent=True)
    bus = await Bus.connect(nats_url, "test/other")
    try:  # a first submission the runner refuses (its spec names no nodes)
        await bus.publish(events.campaign_submitted(events.CampaignSubmitted(campaign="sub", spec={"name": "sub"})))
        async with services(nats_url, tmp_path) as s:
            await s.runner()
            assert (await refused_record(bus)).get("seq") == 1
        # the runner is down from here on; the stream is deleted and made again by hand, the runner's KV kept
        await bus.js.delete_stream(subjects.STREAM)
        await bus.ensure_streams()
    finally:
        await bus.close()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    capsys.readouterr()
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0, capsys.readouterr().err
    bus = await Bus.connect(nats_url, "test/other")
    try:
        held = await earlier.last_submission(bus, "sub")
        assert held is not None and held.seq == 1, held  # the old record's sequence
    finally:
        await bus.close()
    capsys.readouterr()
    assert await asyncio.to_thread(cli, ["campaign", "status", "sub", "--follow", "--timeout", "1"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "refused" not in err and "no campaign named 'sub'" in err, err
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 2  # the new one is not planned yet
    err = " ".join(capsys.readouterr().err.split())
    assert "campaign 'sub' was already submitted at" in err and "the runner has not planned it yet" in err, err
    assert await submissions(nats_url) == 1


async def test_a_refused_submission_without_a_time_frees_the_name(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """Another publisher's campaign.submitted that carries no `time` is read with now() at each decode: the runner
    recorded its own decode time, submit compared it with another, and the name stayed blocked for ever ('already
    submitted ... the runner has not planned it yet', exit 2). Now the record names its stream sequence."""
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    await know_node(nats_url, "n1", host_agent=True)
    nc = await nats.connect(nats_url)
    bus = await Bus.connect(nats_url, "test/other")
    try:
        await bus.ensure_streams()
        doc = {"id": "x1", "type": "podtax.campaign.submitted.v1", "source": "another-tool",
               "subject": "podtax.campaign.submitted.sub", "data": {"campaign": "sub", "spec": {"name": "sub"}}}
        await nc.jetstream().publish("podtax.campaign.submitted.sub", json.dumps(doc).encode())
        async with services(nats_url, tmp_path) as s:
            await s.runner()
            record = await refused_record(bus)
        assert record.get("seq") == 1, record
    finally:
        await bus.close()
        await nc.close()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    capsys.readouterr()
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0, capsys.readouterr().err
    assert await submissions(nats_url) == 2
