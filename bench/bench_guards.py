"""Benchmark: what the issue-12 guards cost (prints figures, median of 3, with the load average).

1. Refusing a 9.4 MB campaign matrix (size cap before parsing), against loading a normal example.
2. Storing a batch of 1,000 results into a DuckDB file holding 100,000 runs, with the OVERLAP
   marking (podtax_analyzer.overlap) against the same write without it.
3. A 1,000-event batch holding one poison event (found by bisection) against a clean batch.

    .venv/bin/python bench/bench_guards.py [--existing 100000] [--batch 1000]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from podtax import campaign, events
from podtax.oneline_args import OneLineParser
from podtax_analyzer import store as store_module
from podtax_analyzer.isolate import write_isolating
from podtax_analyzer.store import Store

REPO = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 1, 5, tzinfo=UTC)


def median_of(fn: Callable[[], object], n: int = 3) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[0]


def result(i: int, prefix: str, **prov: int) -> events.ResultV1:
    run = events.RunSpec(run_id=f"{prefix}{i}", campaign="bench", node=f"n{i % 50}", env="host",
                         test="sysbench-cpu", params={"threads": 1}, sequence=i)
    start = T0 + timedelta(seconds=30 * (i // 50))  # one run per node every 30 s, 10 s long: no overlap
    res = events.Result(run=run, tool="sysbench", tool_version="1.0.20", parser_version="1",
                        metrics=[events.Metric(name="events_per_second", value=1.0 + i % 7, unit="events/s",
                                               higher_is_better=True)],
                        started_at=start, ended_at=start + timedelta(seconds=10),
                        provenance=events.Provenance(**prov))
    return events.result(res, "bench", event_id=f"{prefix}{i}.e")


def bench_campaign(tmp: Path) -> None:
    huge = tmp / "huge.yaml"
    body = ", ".join(str(1 + i % 1024) for i in range(1_900_000))
    huge.write_text(f"name: huge\nnodes: [a, b]\ntests:\n  - test: sysbench-cpu\n    matrix: {{threads: [{body}]}}\n")
    example = sorted((REPO / "examples" / "campaigns").glob("*.yaml"))[0]

    def refuse() -> None:
        try:
            campaign.load(huge)
        except campaign.CampaignError:
            return
        raise AssertionError("not refused")

    t_refuse = median_of(refuse)
    t_example = median_of(lambda: campaign.load(example))
    print(f"campaign: refusing a {huge.stat().st_size / 1e6:.1f} MB matrix {t_refuse * 1e6:.0f} µs; anchor: "
          f"loading {example.name} {t_example * 1e6:.0f} µs; ratio {t_refuse / t_example:.2f} (load {loadavg()})")


def bench_overlap(tmp: Path, existing: int, batch: int) -> None:
    store = Store(tmp / "bench.duckdb")
    for start in range(0, existing, 5000):
        store.write_batch([result(i, "old") for i in range(start, min(existing, start + 5000))])
    batches = iter(range(1, 100))
    real = store_module.mark_overlaps

    def write(mark: bool) -> None:
        k = next(batches)
        evs = [result(existing + k * batch + i, f"b{k}-") for i in range(batch)]
        store_module.mark_overlaps = real if mark else (lambda con, ids: set())  # type: ignore[assignment]
        try:
            store.write_batch(evs)
        finally:
            store_module.mark_overlaps = real

    with_mark, without = [], []
    for _ in range(3):  # alternate, so drift hits both alike
        with_mark.append(median_of(lambda: write(True), 1))
        without.append(median_of(lambda: write(False), 1))
    a, b = statistics.median(with_mark), statistics.median(without)
    print(f"overlap: a batch of {batch:,} results into {existing:,} runs {a * 1000:.0f} ms with OVERLAP marking; "
          f"anchor without it {b * 1000:.0f} ms; ratio {a / b:.2f} (load {loadavg()})")
    store.close()


def bench_poison(tmp: Path, batch: int) -> None:
    store = Store(tmp / "poison.duckdb")
    rounds = iter(range(1, 100))

    def clean() -> None:
        k = next(rounds)
        write_isolating(store.write_batch, [result(i, f"c{k}-") for i in range(batch)])

    def poisoned() -> None:
        k = next(rounds)
        evs = [result(i, f"p{k}-") for i in range(batch)]
        evs[batch // 3] = result(batch // 3, f"p{k}-", nr_throttled_before=0, nr_throttled_after=2**64)
        _, poison = write_isolating(store.write_batch, evs)
        assert len(poison) == 1

    t_poison, t_clean = median_of(poisoned), median_of(clean)
    print(f"poison: a batch of {batch:,} with one poison event {t_poison * 1000:.0f} ms (bisection); anchor: a "
          f"clean batch {t_clean * 1000:.0f} ms; ratio {t_poison / t_clean:.2f} (load {loadavg()})")
    store.close()


def main() -> None:
    ap = OneLineParser()
    ap.add_argument("--existing", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_campaign(Path(tmp))
        bench_poison(Path(tmp), args.batch)
        bench_overlap(Path(tmp), args.existing, args.batch)


if __name__ == "__main__":
    main()
