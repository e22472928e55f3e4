"""The score cache's running sum (scores.add_exact) gives the mean math.fsum gives over every value,
and its merge of new runs keeps a key's values and runs sorted.

The cache adds each publication's new values to a key's exact running sum instead of summing the key's
whole history again; its mean must stay bit-identical to scores.node_scores, which sums every stored
value (exact_mean). Values of wildly different magnitudes, sums that cancel, zeros and values near the
float maximum (where one order of summing overflows and another does not) go through a real store.
The new values and runs are merged into the held ones in one pass; the median, its interval and the
recognition of runs already counted (a republished run must not count twice) depend on their order.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest
from podtax import events
from podtax_analyzer.score_cache import ScoreCache
from podtax_analyzer.scores import add_exact, node_scores
from podtax_analyzer.store import Store

T0 = datetime(2026, 2, 2, 8, tzinfo=UTC)


def test_running_sum_equals_fsum_over_every_value():
    rng = random.Random(15)
    partials: list[float] | None = []
    every: list[float] = []
    naive = 0.0
    naive_differed = False
    for _ in range(300):
        batch = [rng.choice((-1, 1)) * 10 ** rng.uniform(-300, 300) for _ in range(rng.randint(1, 40))]
        if rng.random() < 0.2:  # cancel part of what came before: the small values must survive it
            batch.append(-math.fsum(every[-5:]))
        partials = add_exact(partials, batch)
        every += batch
        naive += sum(batch)
        assert partials is not None and len(partials) < 45
        assert math.fsum(partials) == math.fsum(every)
        naive_differed |= naive != math.fsum(every)
    assert naive_differed  # a plain running sum would not pass this test


def test_running_sum_gives_up_on_overflow_and_stays_given_up():
    assert add_exact([], [1.7e308, 1.6e308]) is None
    assert add_exact(None, [1.0]) is None
    assert add_exact([], [1e308, -1e308]) == []  # a zero sum: nothing left


def _results(key: str, first: int, values: list[float]) -> list[events.ResultV1]:
    out = []
    for i, value in enumerate(values, start=first):
        run = events.RunSpec(run_id=f"{key}-{i}", campaign="c", node=key, env="host", test="sysbench-cpu",
                             params={"threads": 1})
        start = T0 + timedelta(minutes=i)
        res = events.Result(run=run, tool="sysbench", tool_version="1.0.20", parser_version="1",
                            metrics=[events.Metric(name="m", value=value, unit="u", higher_is_better=True)],
                            started_at=start, ended_at=start + timedelta(seconds=10))
        out.append(events.result(res, "test"))
    return out


_rng = random.Random(7)
CASES = {  # one key's values, batch by batch (one run a value)
    "magnitudes": [[_rng.choice((-1, 1)) * 10 ** _rng.uniform(-300, 300) for _ in range(12)] for _ in range(4)],
    "cancelling": [[1e300, 1.0], [-1e300, 3.0], [1e-300, 0.1, 0.2, 0.3]],  # a naive sum loses the small ones
    "zeros": [[0.0, -0.0], [-0.0], [0.0, -0.0, -0.0]],
    "negative-zeros": [[-0.0], [-0.0, -0.0]],
    "sum-to-zero": [[2.5, -1.0], [-1.5]],
    # the sorted values' sum overflows (-1e308 + -1e308: no score), the running one does not (1e308 - 1e308)
    "near-max": [[1e308], [-1e308], [1e308], [-1e308], [1.0]],
    "overflowing": [[1.7e308], [1.6e308], [1.0]],
}


@pytest.mark.parametrize("batches", CASES.values(), ids=CASES.keys())
def test_cache_mean_equals_the_full_recompute(tmp_path, batches):
    store = Store(tmp_path / "sum.duckdb")
    cache = ScoreCache()
    first = 0
    try:
        for values in batches:
            runs = store.write_batch(_results("k", first, values))
            first += len(values)
            got = cache.update(store, runs)
            assert got == node_scores(store.cursor(), since_runs=runs)
            assert [math.copysign(1, s.mean) for s in got] == [math.copysign(1, s.mean) for s in node_scores(
                store.cursor())]  # the same sign of a zero mean too (0.0 == -0.0 would pass above)
    finally:
        store.close()


def test_merged_runs_keep_their_order_and_count_once(tmp_path):
    """Batches of 40 runs whose values repeat (ties) and come in random order; then every run again."""
    rng = random.Random(3)
    store = Store(tmp_path / "merge.duckdb")
    cache = ScoreCache()
    every: set[str] = set()
    try:
        for first in range(0, 200, 40):
            runs = store.write_batch(_results("k", first, [float(rng.randint(1, 9)) for _ in range(40)]))
            every |= runs
            assert cache.update(store, runs) == node_scores(store.cursor(), since_runs=runs)
        (score,) = cache.update(store, every)  # every run known: nothing counts twice
        assert score == node_scores(store.cursor())[0] and score.n == 200
    finally:
        store.close()
