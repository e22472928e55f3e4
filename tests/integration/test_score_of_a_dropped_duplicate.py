"""A node score whose every run the analyzer deleted leaves the scores bucket (the scheduler reads no stale score).

An older podtax (before 6de8b23) stored an imported run under the node as the manifest wrote it (`Node-1`); the same
manifest written `node-1`, as podtax's node-name warning asks, and imported again, gets other run ids. When the
parser's results come before their raw logs, the analyzer stores them (node-1, the Kubernetes node's own spelling)
and publishes their score, then sees the raw logs are duplicates and deletes those runs (store_imports.py). The score
of node-1 stayed in the bucket (n = 1, of runs no longer stored), and the scheduler, which knows the node as node-1,
ranked it by them. The running analyzer, NATS, the importer's events and the parser's derivation."""

from __future__ import annotations

from pathlib import Path

from podtax import events, subjects
from podtax.bus import Bus
from podtax_parser.service import derive_all

from tests.integration.harness import services, wait_for
from tests.integration.test_import_old_node_case import _events, _manifest
from tests.integration.test_score_publication import _published, _until_equal


def _on_bus(raws: list) -> list:
    """The raw-log events with the subject of their run's node (the helper keeps the event's id, not its subject)."""
    return [events.raw_log(e.data, "test").model_copy(update={"id": e.id}) for e in raws]


async def test_the_score_of_deleted_duplicates_leaves_the_bucket(nats_url: str, tmp_path: Path) -> None:
    older = _on_bus(_events(_manifest(tmp_path, ("Node-1", "Node-1")), "pre"))
    again = _on_bus(_events(_manifest(tmp_path, ("node-1", "node-1")), "now"))  # other run ids: duplicates of `older`
    outcomes, poison = derive_all(again)
    assert not poison
    async with services(nats_url, tmp_path) as s:
        await s.analyzer()
        bus = await Bus.connect(nats_url, "test")
        try:
            first, poison = derive_all(older)
            assert not poison
            await bus.publish_many([*older, *first])
            await wait_for(lambda: s.query("SELECT count(*) FROM runs")[0][0] == 2, 30, "the older runs")
            await _until_equal(bus, s.db, "the older runs' scores")

            await bus.publish_many(outcomes)  # results first: stored, and their scores (node-1) published
            await wait_for(lambda: s.query("SELECT count(*) FROM runs")[0][0] == 4, 30, "the duplicates' results")
            await _until_equal(bus, s.db, "the duplicates' scores")
            lower = [k for k in await _published(bus) if f".{subjects.kv_token('node-1')}." in k]
            assert lower, "the duplicates' scores were published under node-1"

            await bus.publish_many(again)  # their raw logs: duplicates, so their runs are deleted
            await wait_for(lambda: s.query("SELECT count(*) FROM imported_duplicates")[0][0] == 2, 30,
                           "the duplicates recorded")
            assert s.query("SELECT count(*) FROM runs")[0][0] == 2
            published = await _until_equal(bus, s.db, "after the duplicates were deleted")
        finally:
            await bus.close()
    assert not [k for k in published if k in lower]
    assert {doc["node"] for doc in published.values()} == {"Node-1"}


async def test_a_score_left_in_the_bucket_before_a_restart_is_deleted_at_start(nats_url: str, tmp_path: Path) -> None:
    """A score in the bucket whose runs the database does not hold (deleted while the analyzer was down, or before
    it published again) is deleted when the analyzer puts the stored scores back at start."""
    older = _on_bus(_events(_manifest(tmp_path, ("Node-1", "Node-1")), "pre"))
    first, _ = derive_all(older)
    gone = first[0].data.run.model_copy(update={"node": "node-1"})
    kept = first[0].data
    stale = events.NodeScore(cluster="local", node="node-1", env=gone.env, test=gone.test,
                             params_key="events=200 max_prime=100000 threads=1 time=0", metric="events_per_second",
                             unit="events/s", higher_is_better=True, median=183.0, mean=183.0, n=1,
                             updated_at=kept.ended_at)
    key = subjects.score_key(stale.cluster, stale.env, stale.node, stale.test, stale.metric, stale.params_key)
    async with services(nats_url, tmp_path) as s:
        bus = await Bus.connect(nats_url, "test")
        try:
            await bus.kv(subjects.SCORES_BUCKET)
            await bus.kv_put_many(subjects.SCORES_BUCKET, [(key, stale.model_dump_json().encode())])
            assert key in await _published(bus)
            await s.analyzer()
            await bus.publish_many([*older, *first])
            await wait_for(lambda: s.query("SELECT count(*) FROM runs")[0][0] == 2, 30, "the runs")
            published = await _until_equal(bus, s.db, "after the start")
        finally:
            await bus.close()
    assert key not in published and published
