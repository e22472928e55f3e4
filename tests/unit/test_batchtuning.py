"""The services' garbage-collector threshold lets a batch in flight be freed by reference counting
before a young-generation collection scans it (batchtuning.tune_for_batches)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from podtax import events
from podtax.batchtuning import gc_threshold, tune_for_batches
from podtax.derive import derive

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64"


def analyzer_batch(size: int) -> list[bytes]:
    """`size` encoded events as the analyzer receives them: raw sysbench logs and their results."""
    stdout = (CORPUS / "sysbench-cpu-prime100000-1t.log").read_text()
    out: list[bytes] = []
    for i in range(size // 2):
        run = events.RunSpec(run_id=f"gc-{i}", campaign="gc", node=f"node-{i % 5}", env="host",
                             test="sysbench-cpu", params={"threads": 1, "max_prime": 100000})
        log = events.raw_log(events.RawLog(run=run, stdout=stdout, exit_code=0, started_at=events.now(),
                                           ended_at=events.now()), "test")
        out += [events.encode(log), events.encode(derive(log.data, "test"))]
    return out


@pytest.fixture
def tuned() -> Iterator[None]:
    before = gc.get_threshold()
    tune_for_batches(1000)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_decoded_analyzer_batch_is_not_scanned_by_a_young_collection(tuned: None) -> None:
    encoded = analyzer_batch(1000)
    young = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            young.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        batch = [events.decode(data) for data in encoded]  # held, as a batch is until it is committed
    finally:
        gc.callbacks.remove(count)
    assert len(batch) == 1000
    assert young == [], f"{len(young)} collections while one batch of 1,000 events was decoded"


def test_the_threshold_grows_with_the_batch() -> None:
    assert gc_threshold(10_000) == 10 * gc_threshold(1000)  # the analyzer's largest batch (PODTAX_ANALYZER_BATCH)
    assert gc_threshold(256) == gc_threshold(1000)  # small batches keep the floor
