"""podtax.templates.set_by_params: the one rule for a metric the requested parameters fix (its cell gets the
verdict "set by the parameters"). Only the parameters a cell names count: an import manifest that leaves
`events` out says nothing of what the log ran."""

from __future__ import annotations

import pytest
from podtax.templates import set_by_params

CPU = "max_prime=10000 threads=1"
MEMORY = "block_size=1K operation=write threads=1 total_size=1G"


@pytest.mark.parametrize("test,params,metric,want", [
    ("sysbench-cpu", f"events=10000 {CPU} time=60", "events", "events=10000"),  # podtax's template default
    ("sysbench-cpu", f"events=200 {CPU} time=0", "events", "events=200"),
    ("sysbench-cpu", f"events=0 {CPU} time=10", "events", None),  # runs for --time: a throughput
    ("sysbench-cpu", CPU, "events", None),  # a manifest that does not say
    ("sysbench-cpu", f"events=10000 {CPU} time=60", "events_per_second", None),
    ("sysbench-cpu", f"events=10000 {CPU} time=60", "total_time", None),
    ("sysbench-memory", f"{MEMORY} time=0", "operations", "total_size=1G time=0"),
    ("sysbench-memory", f"{MEMORY} time=0", "mib_transferred", "total_size=1G time=0"),
    ("sysbench-memory", f"{MEMORY} time=0", "mib_per_second", None),
    ("sysbench-memory", f"{MEMORY} time=10", "operations", None),  # --time may end it first
    ("sysbench-memory", MEMORY, "events", None),  # sysbench's default time is 10 s
    ("fio", "bs=4k rw=randread", "events", None),
    ("sysbench-cpu", "events=200;time=0", "events", None),  # not k=v k=v: no rule applies
])
def test_set_by_params(test, params, metric, want):
    assert set_by_params(test, params, metric) == want
