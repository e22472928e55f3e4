"""`podtax campaign submit`'s publish expects the name's last submission (Nats-Expected-Last-Subject-Sequence). A single
nats-server refuses a lost race with JetStream error 10071 ('wrong last sequence: <n>'), but a replicated stream
(a 3-server cluster, PODTAX_NATS_REPLICAS=3) refuses it with 10164 ('wrong last sequence', no number) when the other
publish is still in flight at its leader: that was nats-py's APIError traceback, exit 1 (9 of 40 racing pairs on a
3-server cluster, review r2), and so was 10163 ('expected last sequence per subject temporarily unavailable', a new
leader not ready to check). Now 10164 is the refusal (one line, exit 2) and 10163 one line naming the retry (exit 1).

The race cannot be ordered on a cluster, so here a stand-in answers the publish on a real nats-server (no stream holds
the subject; it replies what JetStream replies: a PubAck with the error, parsed by nats-py as for the real stream):
faithful to nats-server 2.15's codes and descriptions (server/errors.json), labelled as a stand-in."""

from __future__ import annotations

import json

import pytest
import typer
from nats.aio.msg import Msg
from podtax import events, subjects
from podtax.bus import Bus
from podtax.cli.earlier import publish_once

from tests.integration.test_submit import GOOD

ERRORS = {  # what nats-server 2.15 replies (server/errors.json: code, err_code, description)
    10071: (400, "wrong last sequence: 3"),
    10164: (400, "wrong last sequence"),
    10163: (503, "expected last sequence per subject temporarily unavailable"),
}


async def published(nats_url: str, err_code: int) -> tuple[int, list[str]]:
    """publish_once's outcome when JetStream answers the publish with `err_code`: (its exit code, the expected sequence
    the publish carried)."""
    bus = await Bus.connect(nats_url, "test/submit")
    seen: list[str] = []

    async def jetstream(msg: Msg) -> None:  # the stand-in: JetStream's PubAck with the error
        seen.append((msg.headers or {}).get("Nats-Expected-Last-Subject-Sequence", ""))
        code, description = ERRORS[err_code]
        await msg.respond(json.dumps({"error": {"code": code, "err_code": err_code,
                                                "description": description}}).encode())

    sub = await bus.nc.subscribe(subjects.join(subjects.CAMPAIGN_SUBMITTED, "sub"), cb=jetstream)
    try:
        event = events.campaign_submitted(events.CampaignSubmitted(campaign="sub", spec=GOOD))
        with pytest.raises(typer.Exit) as raised:
            await publish_once(bus, event, 3)
        return raised.value.exit_code, seen
    finally:
        await sub.unsubscribe()
        await bus.close()


@pytest.mark.parametrize("err_code", [10071, 10164])
async def test_a_lost_race_is_refused_in_one_line(nats_url: str, err_code: int,
                                                  capsys: pytest.CaptureFixture) -> None:
    code, seen = await published(nats_url, err_code)
    said = " ".join(capsys.readouterr().err.split())
    assert code == 2 and seen == ["3"], (code, seen)
    assert "campaign 'sub' was submitted by another publisher" in said and "nothing was submitted" in said, said
    assert "Traceback" not in said


async def test_a_leader_not_ready_says_submit_again(nats_url: str, capsys: pytest.CaptureFixture) -> None:
    code, _ = await published(nats_url, 10163)
    said = " ".join(capsys.readouterr().err.split())
    assert code == 1, code
    assert "nothing was submitted" in said and "submit it again" in said and "10163" in said, said
    assert "could not check the last submission of campaign 'sub' just now" in said, said  # not "'sub''s last"
