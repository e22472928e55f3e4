"""Runner state that scales (issue 12 item 2): a 100,000-run campaign is saved as small documents,
and a transition writes a handful of them, never the whole campaign.

The fault it reproduces: the state was one KV value of ~233 bytes a run, so a 4,400-run campaign
outgrew the 1 MiB message limit mid-way and a 6,000-run one could not even be saved once."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from podtax import campaign
from podtax_runner.state import CampaignState

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NATS_MAX_PAYLOAD = 1024 * 1024


def big(nodes: int = 100, reps: int = 250) -> campaign.Campaign:
    return campaign.Campaign.model_validate({
        "name": "big", "nodes": [f"n{i:03d}" for i in range(nodes)], "environments": ["host", "kubernetes"],
        "tests": [{"test": "sysbench-cpu", "params": {"threads": 1}, "matrix": {"max_prime": [1000, 2000]}}],
        "repetitions": {"min": reps, "max": reps}, "timeout": 30, "seed": 1})


@pytest.fixture(scope="module")
def state() -> CampaignState:
    c = big()
    return CampaignState.new(c, dict.fromkeys(c.nodes, 4), "local", 1, T0)


def test_a_100k_run_campaign_is_saved_as_small_documents(state: CampaignState) -> None:
    assert len(state.runs) == 100_000
    docs = state.dirty_documents()
    assert len(docs) == 100_001, "one document per run, and the header"
    assert max(len(v) for _, v in docs) < 8 * 1024, "every document far below NATS's 1 MiB max_payload"
    assert sum(len(v) for _, v in docs) > NATS_MAX_PAYLOAD, "as one value it would not fit (the fault)"
    state.clear_dirty()


def test_a_transition_writes_only_what_changed(state: CampaignState) -> None:
    run = state.next_for("n000", T0)
    assert run is not None
    state.dispatched(run.run_id, T0)
    state.outcome(run.run_id, True, T0 + timedelta(seconds=3))
    keys = [k for k, _ in state.dirty_documents()]
    assert keys == [f"run.big.{run.run_id}", "campaign.big"]
    state.clear_dirty()
    header = json.loads(dict(state.dirty_documents())["campaign.big"])
    assert header["progress"]["n000"]["done"] == 1 and header["runs"] == 100_000


def test_cancel_records_every_pending_run_and_keeps_the_one_in_flight() -> None:
    c = big(nodes=4, reps=10)
    s = CampaignState.new(c, dict.fromkeys(c.nodes, 4), "local", 1, T0)
    r = s.next_for("n000", T0)
    assert r is not None
    s.dispatched(r.run_id, T0)
    assert s.cancel(T0) == len(s.runs) - 1
    assert s.counts() == {"planned": 0, "dispatched": 1, "done": 0, "failed": 0, "cancelled": len(s.runs) - 1}
    assert s.finished_at is None, "the run in flight finishes first"
    assert all(s.next_for(n, T0) is None for n in s.queues)
    assert s.expired(T0 + timedelta(hours=1), 60) == [(r, None)], "no retry after a cancellation"
    assert s.finished_at is not None


def test_undispatched_frees_the_node() -> None:
    c = big(nodes=1, reps=2)
    s = CampaignState.new(c, dict.fromkeys(c.nodes, 4), "local", 1, T0)
    r = s.next_for("n000", T0)
    assert r is not None
    s.dispatched(r.run_id, T0)
    assert s.next_for("n000", T0) is None
    s.undispatched(r.run_id)
    assert s.next_for("n000", T0) == r and s.counts()["dispatched"] == 0


def test_a_legacy_single_value_state_is_read_and_rewritten() -> None:
    c = big(nodes=2, reps=2)
    s = CampaignState.new(c, dict.fromkeys(c.nodes, 4), "local", 1, T0)
    legacy = {"name": "big", "spec": c.model_dump(mode="json"), "seed": 1, "nodes": s.header.nodes,
              "created_at": T0.isoformat(), "reps": dict(s.reps), "settled_cells": [],
              "queues": s.queues, "runs": {rid: json.loads(r.model_dump_json()) for rid, r in s.runs.items()}}
    first = next(iter(legacy["runs"]))
    legacy["runs"][first]["status"] = "done"
    back = CampaignState.from_documents(legacy, [], [])
    assert back.runs.keys() == s.runs.keys() and back.counts()["done"] == 1
    assert len(back.dirty_documents()) == len(s.runs) + 1 + len(s.reps), "everything rewritten as documents"
