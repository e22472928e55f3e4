"""The planner and the campaign state machine: pure, table-driven, seeded."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from podtax import campaign, events, templates
from podtax_runner import plan
from podtax_runner.state import REPORT_GRACE_S, CampaignState

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make(reps: str = "{min: 3, max: 5}", envs: str = "[host, kubernetes]", extra: str = "") -> campaign.Campaign:
    return campaign.parse(f"""
name: c
nodes: [n1, n2]
environments: {envs}
tests:
  - test: sysbench-cpu
    params: {{events: 100}}
    matrix: {{threads: [1, all]}}
repetitions: {reps}
timeout: 30
{extra}""")


def test_expand_counts_and_resolves_all_per_node() -> None:
    p = plan.expand(make(), {"n1": 4, "n2": 8}, seed=1)
    assert {n: len(q) for n, q in p.items()} == {"n1": 12, "n2": 12}  # 2 cells x 3 reps x 2 envs
    assert {r.params["threads"] for r in p["n1"]} == {1, 4}
    assert {r.params["threads"] for r in p["n2"]} == {1, 8}
    # host and pod of a cell get the same resolved parameters
    for q in p.values():
        by_env = {env: Counter(templates.params_key(r.params) for r in q if r.env == env)
                  for env in ("host", "kubernetes")}
        assert by_env["host"] == by_env["kubernetes"]


def test_run_ids_are_unique_and_stable() -> None:
    a = plan.expand(make(), {"n1": 2, "n2": 2}, seed=1)
    b = plan.expand(make(), {"n1": 2, "n2": 2}, seed=99)
    ids_a = {r.run_id for q in a.values() for r in q}
    assert len(ids_a) == 24
    assert ids_a == {r.run_id for q in b.values() for r in q}  # ids do not depend on the order


@pytest.mark.parametrize("seed", range(20))
def test_order_is_interleaved_and_randomized(seed: int) -> None:
    q = plan.expand(make(), {"n1": 2, "n2": 2}, seed=seed)["n1"]
    for key in {templates.params_key(r.params) for r in q}:
        balance = 0
        for r in q:
            if templates.params_key(r.params) == key:
                balance += 1 if r.env == "host" else -1
                assert abs(balance) <= 1
    assert [r.sequence for r in q] == list(range(len(q)))


def test_order_differs_between_seeds() -> None:
    orders = {tuple(r.env for r in plan.expand(make(), {"n1": 2, "n2": 2}, seed=s)["n1"]) for s in range(10)}
    assert len(orders) > 1


def test_retry_is_a_new_attempt() -> None:
    run = plan.expand(make(), {"n1": 2, "n2": 2}, seed=1)["n1"][0]
    again = plan.retry(run)
    assert again.attempt == 2 and again.run_id == run.run_id + "-a2" and again.params == run.params


def state(**kw: str) -> CampaignState:
    return CampaignState.new(make(**kw), {"n1": 2, "n2": 2}, "local", 1, T0)


def test_one_run_at_a_time_per_node() -> None:
    s = state()
    first = s.next_for("n1", T0)
    assert first is not None
    s.dispatched(first.run_id, T0)
    assert s.next_for("n1", T0) is None
    assert s.next_for("n2", T0) is not None
    assert s.outcome(first.run_id, True, T0)
    assert not s.outcome(first.run_id, True, T0), "a duplicate outcome changes nothing"
    assert s.next_for("n1", T0) is not None


def test_spacing_delays_the_next_run() -> None:
    s = state(extra="spacing: 10m")
    r = s.next_for("n1", T0)
    assert r is not None
    s.dispatched(r.run_id, T0)
    s.outcome(r.run_id, True, T0)
    assert s.next_for("n1", T0 + timedelta(minutes=9)) is None
    assert s.next_for("n1", T0 + timedelta(minutes=10)) is not None


def test_no_report_is_retried_once_then_failed() -> None:
    s = state()
    r = s.next_for("n1", T0)
    assert r is not None
    s.dispatched(r.run_id, T0)
    assert s.expired(T0 + timedelta(seconds=29)) == []
    late = T0 + timedelta(seconds=30 + REPORT_GRACE_S + 1)
    [(failed, again)] = s.expired(late)
    assert failed.run_id == r.run_id and again is not None and again.attempt == 2
    assert s.runs[r.run_id].status == "failed" and s.runs[r.run_id].reason == "no-report"
    assert s.next_for("n1", late) == again, "the retry runs next"
    s.dispatched(again.run_id, late)
    [(failed2, again2)] = s.expired(late + timedelta(seconds=200))
    assert failed2.run_id == again.run_id and again2 is None


def test_a_run_still_executing_is_expired_only_past_its_extra_bound() -> None:
    """A run the runner's control-plane executor still runs gets `executing_s` past timeout + grace, not for ever
    (reviewer: a stuck executor was never expired, and held every control-plane run behind it)."""
    s = state()
    r = s.next_for("n1", T0)
    assert r is not None
    s.dispatched(r.run_id, T0)
    due = T0 + timedelta(seconds=r.timeout_s + REPORT_GRACE_S)
    assert s.expired(due + timedelta(seconds=99), executing={r.run_id}, executing_s=100) == []
    [(failed, _)] = s.expired(due + timedelta(seconds=101), executing={r.run_id}, executing_s=100)
    assert failed.run_id == r.run_id and s.runs[r.run_id].reason == "no-report"



def test_a_run_whose_report_is_held_is_not_expired() -> None:
    """A run whose log or failure its executor holds until NATS takes it (held) never expires: NATS may yet store it
    (review r4 of 686c54e: given up at a deadline, it was expired, run again and both attempts stored); released,
    it expires as before."""
    s = state()
    r = s.next_for("n1", T0)
    assert r is not None
    s.dispatched(r.run_id, T0)
    late = T0 + timedelta(seconds=r.timeout_s + REPORT_GRACE_S + 10_000)
    assert s.expired(late, executing={r.run_id}, executing_s=100, held={r.run_id}) == []
    [(failed, _)] = s.expired(late, executing=set(), executing_s=100, held=set())
    assert failed.run_id == r.run_id and s.runs[r.run_id].reason == "no-report"

def test_a_run_whose_log_is_published_is_not_expired_while_its_outcome_comes_back() -> None:
    """The runner's executor published the run's log (reported) and left `executing`; the outcome comes back
    through the parser and the analyzer. Expired in that window (past timeout + grace), the run was retried and
    stored twice (test_cp_no_report failed in a CI at 18 s of cleanup); it now has grace + executing_s from its
    report, and is expired after that."""
    s = state()
    r = s.next_for("n1", T0)
    assert r is not None
    s.dispatched(r.run_id, T0)
    due = T0 + timedelta(seconds=r.timeout_s + REPORT_GRACE_S)
    assert s.reported(r.run_id, due + timedelta(seconds=50))  # published late: its cleanup outlasted the grace
    assert s.expired(due + timedelta(seconds=60), executing=set(), executing_s=100) == []
    [(failed, _)] = s.expired(due + timedelta(seconds=50 + REPORT_GRACE_S + 101), executing=set(), executing_s=100)
    assert failed.run_id == r.run_id


def test_a_resumed_state_gives_runs_in_flight_a_fresh_grace() -> None:
    s = state()
    r = s.next_for("n1", T0)
    assert r is not None
    s.dispatched(r.run_id, T0)
    back = CampaignState.from_documents(s.header_json(), [d for k, d in s.dirty_documents() if k.startswith("run.")],
                                        [])
    resumed = T0 + timedelta(hours=1)  # the runner was away long past the run's deadline
    back.resumed_at = resumed
    assert back.expired(resumed + timedelta(seconds=REPORT_GRACE_S - 1)) == [], "its result may wait on the bus"
    [(failed, _)] = back.expired(resumed + timedelta(seconds=REPORT_GRACE_S + 1))
    assert failed.run_id == r.run_id
    # the state that never went away keeps the plain deadline
    assert [f.run_id for f, _ in s.expired(resumed)] == [r.run_id]


def test_reported_is_kept_across_a_restart_and_only_for_runs_in_flight() -> None:
    s = state()
    r = s.next_for("n1", T0)
    assert r is not None
    assert not s.reported(r.run_id, T0), "a planned run has not been sent"
    assert not s.reported("no-such-run", T0)
    s.dispatched(r.run_id, T0)
    s.clear_dirty()
    assert s.reported(r.run_id, T0 + timedelta(seconds=5))
    assert not s.reported(r.run_id, T0 + timedelta(seconds=6)), "recorded once"
    assert s.runs[r.run_id].status == "dispatched", "still waiting for its outcome"
    docs = s.dirty_documents()
    assert [k for k, _ in docs] == [f"run.{s.name}.{r.run_id}", f"campaign.{s.name}"]
    back = CampaignState.from_documents(s.header_json(), [d for k, d in docs if k.startswith("run.")], [])
    assert back.runs[r.run_id].reported_at == T0 + timedelta(seconds=5)
    assert back.outcome(r.run_id, True, T0 + timedelta(seconds=9))
    assert not back.reported(r.run_id, T0 + timedelta(seconds=10)), "finished runs stay finished"


def finish_all(s: CampaignState) -> None:
    for rid, r in s.runs.items():
        if r.status == "planned":
            s.dispatched(rid, T0)
            s.outcome(rid, True, T0)


def stats(s: CampaignState, lo: float, hi: float, n: int = 6) -> events.CellStats:
    r = next(iter(s.runs.values())).run
    return events.CellStats(campaign="c", node=r.node, test=r.test, params_key=templates.params_key(r.params),
                            metric="events_per_second", n_host=n // 2, n_pod=n - n // 2, ratio=1.0, ci_low=lo,
                            ci_high=hi, verdict="inconclusive")


def test_wide_ci_extends_a_cell_up_to_max_then_settles() -> None:
    s = state(reps="{min: 3, max: 5, target_ci_width: 0.02}")
    finish_all(s)
    assert s.finished_at is None, "with a target, the campaign waits for each cell's statistics"
    added = s.cell_stats(stats(s, 0.9, 1.1), T0)
    assert len(added) == 2 and {r.env for r in added} == {"host", "kubernetes"}
    queue = s.queues[added[0].node]
    assert [r.sequence for r in added] == [len(queue) - 2, len(queue) - 1], "numbered at the end of its queue"
    finish_all(s)
    assert len(s.cell_stats(stats(s, 0.9, 1.1, n=8), T0)) == 2
    finish_all(s)
    assert s.cell_stats(stats(s, 0.9, 1.1, n=10), T0) == [], "max reached"
    assert stats(s, 0, 1).node + "|" in s.settled_cells[0]


def test_narrow_ci_settles_the_cell_and_the_campaign_finishes() -> None:
    s = state(reps="{min: 3, max: 5, target_ci_width: 0.02}")
    finish_all(s)
    for key in list(s.reps):
        node, test, pkey = key.split("|")
        st = stats(s, 0.995, 1.005).model_copy(update={"node": node, "params_key": pkey})
        assert s.cell_stats(st, T0) == []
    assert s.finished_at is not None
    assert s.cell_stats(stats(s, 0.9, 1.1), T0) == [], "a settled cell stays settled"


def test_statistics_before_the_last_outcome_are_kept_and_used() -> None:
    s = state(reps="{min: 3, max: 5, target_ci_width: 0.02}")
    first = next(iter(s.runs.values())).run
    key = f"{first.node}|{first.test}|{templates.params_key(first.params)}"
    cell = [rid for rid, r in s.runs.items()
            if f"{r.run.node}|{r.run.test}|{templates.params_key(r.run.params)}" == key]
    for rid in cell[:-1]:
        s.dispatched(rid, T0)
        s.outcome(rid, True, T0)
    s.dispatched(cell[-1], T0)
    assert s.cell_stats(stats(s, 0.9, 1.1), T0) == [], "the last run is still in flight"
    before = len(s.runs)
    s.outcome(cell[-1], True, T0)
    assert len(s.runs) == before + 2, "the kept statistics extend the cell when its last run reports"


def test_stale_statistics_wait_for_fresher_ones() -> None:
    s = state(reps="{min: 3, max: 5, target_ci_width: 0.02}")
    finish_all(s)
    assert s.cell_stats(stats(s, 0.9, 1.1, n=2), T0) == []


def test_without_target_no_extension() -> None:
    s = state()
    finish_all(s)
    assert s.cell_stats(stats(s, 0.5, 1.5), T0) == []


def reload(s: CampaignState) -> CampaignState:
    docs = dict(s.dirty_documents())
    s.clear_dirty()
    header = json.loads(docs.pop(f"campaign.{s.name}"))
    return CampaignState.from_documents(header, [v for k, v in docs.items() if k.startswith("run.")],
                                        [v for k, v in docs.items() if k.startswith("cell.")])


def test_state_round_trips_through_documents() -> None:
    s = state(reps="{min: 3, max: 5, target_ci_width: 0.02}")
    r = s.next_for("n1", T0)
    assert r is not None
    s.dispatched(r.run_id, T0)
    back = reload(s)
    assert back.queues == s.queues and back.runs.keys() == s.runs.keys()
    assert back.in_flight("n1") is not None and back.next_for("n1", T0) is None, "the in-flight run is kept"
    assert back.counts() == s.counts()


def test_only_the_primary_metric_steers_a_cell() -> None:
    s = state(reps="{min: 3, max: 5, target_ci_width: 0.02}")
    finish_all(s)
    other = stats(s, 0.5, 1.5).model_copy(update={"metric": "latency_max"})
    assert s.cell_stats(other, T0) == []
    assert len(s.cell_stats(stats(s, 0.5, 1.5), T0)) == 2
