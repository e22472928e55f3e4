"""podtax.templates.set_by_params: the one rule for a metric set rather than measured (its cell gets the verdict
"set by the parameters"): a count limit that stopped every run (none SHORT), a time limit every run lasted, or
the tool's own timing window (hdparm). A count the params leave out is taken as set only when every run counted
the same."""

from __future__ import annotations

import pytest
from podtax.templates import set_by_params

CPU = "max_prime=10000 threads=1"
MEMORY = "block_size=1K operation=write threads=1 total_size=1G"
RUNS = [183.0, 170.0, 171.5]  # a measured count or time: differs run to run
WINDOW = "hdparm times its reads over a fixed window"


@pytest.mark.parametrize("test,params,metric,values,short,want", [
    ("sysbench-cpu", f"events=10000 {CPU} time=60", "events", [10000] * 3, 0, "events=10000 fixes"),
    ("sysbench-cpu", f"events=200 {CPU} time=0", "events", [200] * 3, 0, "events=200 fixes"),
    ("sysbench-cpu", f"events=0 {CPU} time=10", "events", RUNS, 0, None),  # runs for --time: a throughput
    ("sysbench-cpu", f"events=0 {CPU} time=10", "events", [1000] * 4, 0, None),  # events=0: no count limit
    ("stress-ng-cpu", "ops=0 threads=1 timeout=10", "bogo_ops", [3000] * 3, 0, None),  # ops=0: none either
    ("sysbench-cpu", f"events=100000 {CPU} time=10", "events", RUNS, 3, None),  # every run SHORT: a throughput
    ("sysbench-cpu", f"events=100000 {CPU} time=10", "events", [*RUNS, 100000], 3, None),  # some SHORT
    ("sysbench-cpu", CPU, "events", [200] * 4, 0, "every run counted the same events, 200"),  # the manifest omits it
    ("sysbench-cpu", CPU, "events", RUNS, 0, None),
    ("sysbench-cpu", f"events=10000 {CPU} time=60", "events_per_second", RUNS, 0, None),
    ("sysbench-cpu", f"events=10000 {CPU} time=60", "total_time", [1.1, 1.2], 0, None),  # the time the count took
    ("sysbench-cpu", f"events=0 {CPU} time=10", "total_time", [10.0003, 10.0001], 0, "events=0 time=10"),
    ("sysbench-cpu", f"events=100000 {CPU} time=10", "total_time", [10.0003, 10.0001], 2, "time=10 fixes"),
    ("sysbench-cpu", f"events=100000 {CPU} time=10", "total_time", [10.0003, 9.2], 1, None),  # some SHORT
    ("sysbench-memory", f"{MEMORY} time=0", "operations", RUNS, 0, "total_size=1G time=0 fixes"),
    ("sysbench-memory", f"{MEMORY} time=0", "mib_transferred", RUNS, 0, "total_size=1G time=0 fixes"),
    ("sysbench-memory", f"{MEMORY} time=0", "mib_per_second", RUNS, 0, None),
    ("sysbench-memory", f"{MEMORY} time=10", "operations", RUNS, 0, None),  # --time may end it first
    ("sysbench-memory", MEMORY, "events", RUNS, 0, None),  # sysbench's default time is 10 s
    ("sysbench-memory", f"{MEMORY} time=3", "total_time", [3.0001, 3.0002], 0, "time=3 fixes total_time"),
    ("sysbench-memory", f"{MEMORY} time=3", "total_time", [0.4, 3.0002], 0, None),  # total_size ended one first
    ("stress-ng-cpu", "ops=3000 threads=1", "bogo_ops", [3000] * 3, 0, "ops=3000 fixes bogo_ops"),
    ("stress-ng-cpu", "ops=3000 threads=1 timeout=10", "bogo_ops", [3000, 2100], 1, None),  # SHORT: ran out of time
    ("stress-ng-cpu", "ops=0 threads=1 timeout=10", "real_time", [10.0, 9.99], 0, "ops=0 timeout=10"),
    ("stress-ng-cpu", "ops=3000 threads=1 timeout=10", "real_time", [1.69, 1.8], 0, None),
    ("stress-ng-cpu", "ops=3000 threads=1", "bogo_ops_per_second_real", RUNS, 0, None),
    ("hdparm", "device=/dev/sda1 mode=disk", "disk_read_time", [3.02, 3.04], 0, WINDOW),
    ("hdparm", "device=/dev/sda1 mode=cached", "cached_read_time", [2.0, 2.0], 0, WINDOW),
    ("hdparm", "device=/dev/sda1 mode=disk", "disk_read_mb", [38, 36], 0, None),  # what it read in the window
    ("fio", "bs=4k rw=randread", "events", [5, 5], 0, None),
    ("sysbench-cpu", "events=200;time=0", "events", [200, 200], 0, None),  # not k=v k=v: no rule applies
])
def test_set_by_params(test, params, metric, values, short, want):
    got = set_by_params(test, params, metric, values, short)
    assert (got and got.how) == want or (want is not None and got is not None and want in got.how), got


def test_the_tool_rule_names_the_tool():
    got = set_by_params("hdparm", "device=/dev/sda1 mode=disk", "disk_read_time", [3.0, 3.1])
    assert got is not None and got.by == "hdparm's timing window"
    assert set_by_params("sysbench-cpu", "events=200 time=0", "events", [200.0]).by == "the parameters"
