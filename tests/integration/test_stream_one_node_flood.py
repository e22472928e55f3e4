"""One node could fill the events stream every node shares: it was bounded in size only (discard new), so a host
agent publishing without end (its NATS user may publish its node's logs, failures and facts) filled it, and NATS
then refused every other node's reports ('maximum bytes exceeded'; deploy/host/INSTALL.md). Each subject of the
events stream now holds at most PODTAX_NATS_STREAM_MAX_MSGS_PER_SUBJECT messages and refuses more (discard new per
subject: nothing stored is discarded), so the flood stops at that node's own subject and the others' reports are
still taken."""

from __future__ import annotations

import pytest
from podtax import events
from podtax.bus import Bus, Unacked


def log_of(node: str, n: int) -> events.RawLogV1:
    run = events.RunSpec(run_id=f"flood-{node}-{n:06d}", campaign="flood", node=node, env="host", test="sysbench-cpu",
                         params={"threads": 1, "max_prime": 2000, "events": 100, "time": 5}, timeout_s=60)
    now = events.now()
    return events.raw_log(events.RawLog(run=run, stdout="x" * 1_000, exit_code=0, started_at=now, ended_at=now),
                          "test")


async def flood(bus: Bus, node: str, most: int) -> Unacked:
    """Publish `node`'s logs until NATS refuses one (at most `most`): the refusal."""
    for n in range(most):
        try:
            await bus.publish(log_of(node, n))
        except Unacked as exc:
            return exc
    raise AssertionError(f"NATS took {most} logs of {node}: no limit refused them")


async def test_one_node_flooding_its_subject_leaves_room_for_the_others(nats_url: str) -> None:
    bus = await Bus.connect(nats_url, "test")
    try:
        # room for about 100 of these logs in all; each subject holds 20
        await bus.ensure_streams(max_bytes=150_000, max_msgs_per_subject=20)
        refusal = await flood(bus, "node-a", 1_000)
        assert str(refusal).startswith("JetStream refused the events: subject podtax.run.log.host.node-a holds its "
                                       "limit of messages in stream PODTAX (maximum messages per subject exceeded)"), \
            refusal  # before: 'its stream is full (maximum bytes exceeded)', after about 100 logs
        assert "PODTAX_NATS_STREAM_MAX_MSGS_PER_SUBJECT" in str(refusal), refusal
        await bus.publish(log_of("node-b", 0))  # before: refused, the stream full
        info = await bus.js.stream_info("PODTAX", subjects_filter="podtax.run.log.>")
        assert info.state.subjects == {"podtax.run.log.host.node-a": 20, "podtax.run.log.host.node-b": 1}
    finally:
        await bus.close()


async def test_a_stream_made_without_the_limit_is_named_in_the_warning(nats_url: str, caplog) -> None:
    """A stream made by an earlier version has no per-subject limit: a service says so (podtax changes no stream)."""
    bus = await Bus.connect(nats_url, "test")
    try:
        await bus.ensure_streams(max_bytes=150_000, max_msgs_per_subject=-1)
        await bus.ensure_streams(max_bytes=150_000, max_msgs_per_subject=20)
    finally:
        await bus.close()
    [warning] = [r.getMessage() for r in caplog.records if r.name == "podtax.bus" and r.levelname == "WARNING"]
    assert "max_msgs_per_subject -1 (this service: 20); discard_new_per_subject False (this service: True)" in warning


@pytest.mark.parametrize("limit", [None, 0, -1])
def test_no_limit_on_the_dead_letters_nor_when_none_is_set(limit: int | None) -> None:
    from podtax.busstreams import events_per_subject

    assert events_per_subject("PODTAX_DLQ", 20) == {}
    assert events_per_subject("PODTAX", limit) == {}
