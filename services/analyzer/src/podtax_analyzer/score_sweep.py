"""The scores bucket's keys without a stored run, and their deletion (the analyzer is the bucket's only writer).

A score cache (score_cache.py) updates the keys its new runs touch, and a key whose every run was deleted is touched
by none: an imported duplicate's result, stored under the node `node-1` before its raw log showed it a duplicate of a
run kept under `Node-1` (store_imports.py), left its score in the bucket, and the scheduler, which knows the node as
node-1, ranked it by a run no longer stored. A reparse that drops a metric left its key the same way.

A key whose statistics raise has no score in node_scores either, though its runs are stored: it is spared (its last
published score stays, as the publications leave it, scores.say_unscored). Before, the sweep deleted it, saying its
runs were no longer stored, and when every key raised (a statistic's bug after an upgrade) it emptied the bucket."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from nats.js.kv import KeyValue
from podtax import events, subjects
from podtax.bus import Bus

from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store

log = logging.getLogger("podtax.analyzer")


def score_items(scores: list[events.NodeScore]) -> list[tuple[str, bytes]]:
    """The scores bucket's (key, value) pairs of these scores (what the scheduler reads)."""
    return [(subjects.score_key(s.cluster, s.env, s.node, s.test, s.metric, s.params_key), s.model_dump_json().encode())
            for s in scores]


def stale_keys(held: Iterable[str], scores: list[events.NodeScore],
               unscored: Iterable[Sequence[str]] = ()) -> list[str]:
    """Of the bucket's keys `held`, those that are no stored score's (`scores`: every stored one), sorted; the keys
    `unscored` (cluster, node, env, test, params_key, metric: stored, but their statistics raised) are not stale."""
    stored = {subjects.score_key(s.cluster, s.env, s.node, s.test, s.metric, s.params_key) for s in scores}
    stored |= {subjects.score_key(cluster, env, node, test, metric, pkey)
               for cluster, node, env, test, pkey, metric in unscored}
    return sorted(set(held) - stored)


async def sweep(kv: KeyValue, store: Store, scores: list[events.NodeScore] | None = None,
                unscored: Iterable[Sequence[str]] = ()) -> list[str]:
    """Delete the bucket's scores of keys without a stored run (`scores`: every stored one, and `unscored` the keys
    node_scores left out, both read when `scores` is not given); the scheduler's watch drops them. Returns the
    deleted keys."""
    if scores is None:
        left_out: list[tuple[str, ...]] = []
        scores = await asyncio.to_thread(node_scores, store.cursor(), unscored=left_out)
        unscored = left_out
    stale = stale_keys(await Bus.kv_keys(kv), scores, unscored)
    for key in stale:
        await kv.delete(key)
    if stale:
        log.info("deleted %d score(s) of %s whose runs are no longer stored, e.g. %s", len(stale),
                 subjects.SCORES_BUCKET, stale[0])
    return stale
