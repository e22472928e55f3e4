"""The runner's stamp of a run with its campaign's submission (RunSpec.submitted): a run resumed after a restart
(its campaign read back from the KV documents) is sent stamped as it was first sent, under the same event id, and
its report is taken as this submission's; a report of another submission of the name is told apart (review r1: no
unit test had these). Real CampaignState and its KV documents; real event encoding."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from podtax import events
from podtax.campaign import Campaign
from podtax_runner.state import CampaignState

SPEC = {"name": "c", "nodes": ["n1"], "environments": ["host"], "seed": 7,
        "tests": [{"test": "sysbench-cpu", "params": {"threads": 1}}], "repetitions": {"min": 2, "max": 2}}


def planned(submitted: datetime | None) -> CampaignState:
    return CampaignState.new(Campaign.model_validate(SPEC), {"n1": 2}, "local", 7, events.now(), submitted)


def test_a_run_resumed_after_a_restart_is_sent_stamped_as_first_sent() -> None:
    at = datetime.now(timezone(timedelta(hours=5, minutes=30))).replace(microsecond=123456)  # a submitter's zone
    wire = events.encode(events.campaign_submitted(events.CampaignSubmitted(campaign="c", spec=SPEC))
                         .model_copy(update={"time": at}))
    state = planned(events.decode(wire).time)
    run = state.next_for("n1", events.now())
    assert run is not None and run.submitted == at
    state.dispatched(run.run_id, events.now())
    docs = dict(state.dirty_documents())
    again = CampaignState.from_documents(json.loads(docs["campaign.c"]),
                                         [v for k, v in docs.items() if k.startswith("run.")], [])
    held = again.runs[run.run_id].run
    resent = again.stamped(held)
    assert resent.submitted == at and resent.event_id("request") == run.event_id("request")
    echo = events.decode(events.encode(events.run_requested(resent, "t"))).data.run  # as an agent echoes it
    assert not again.of_another_submission(echo)
    assert again.stamped(resent) is resent  # stamped once


def test_a_report_of_another_submission_is_told_apart() -> None:
    first = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    state = planned(first)
    run = state.next_for("n1", events.now())
    assert run is not None
    assert not state.of_another_submission(run)
    assert not state.of_another_submission(run.model_copy(update={"submitted": first.astimezone(
        timezone(timedelta(hours=-7)))}))  # the same instant in another zone
    assert state.of_another_submission(run.model_copy(update={"submitted": first - timedelta(minutes=5)}))
    assert state.of_another_submission(run.model_copy(update={"submitted": first + timedelta(microseconds=1)}))
    assert not state.of_another_submission(run.model_copy(update={"submitted": None}))  # an older agent: as before
    unstamped = planned(None)  # planned before stamps (a campaign resumed from an older runner's KV)
    plain = unstamped.next_for("n1", events.now())
    assert plain is not None and plain.submitted is None and unstamped.stamped(plain) is plain
    assert not unstamped.of_another_submission(run)
