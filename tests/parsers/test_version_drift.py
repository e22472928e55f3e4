"""Output forms of other tool versions than this host's, RECONSTRUCTED (not captures) from the upstream
printf format strings, to check the parsers read them right or refuse them clearly.

Each sample names the upstream release tag and the source lines it was built from; the figures are
computed as that code computes them (fio's num2str included), not copied from a real run.
"""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text

# fio 2.2.10 (tag fio-2.2.10), stat.c show_ddir_status: `"  %s: io=%s, bw=%s/s, iops=%s, runt=%6llumsec\n"` with
# iops_p = num2str(iops, 6, 1, 0, 0), lib/num2str.c postfix { "", "K", "M", ... }: 10,066,330 reads of 4 KiB in
# 8000 msec (null ioengine) are 1,258,291 IOPS, printed `1258.3K`; io 39322MB, bw 4915.3MB/s (num2str's rounding).
# fio 2.0.x (char postfix `K`) and every release to 2.16 print the same upper-case K; 2.17 and later `k`.
FIO_2_2_10_MEGA_IOPS = """\
nullread: (g=0): rw=randread, bs=4K-4K/4K-4K/4K-4K, ioengine=null, iodepth=1
fio-2.2.10
Starting 1 process

nullread: (groupid=0, jobs=1): err= 0: pid=4242: Fri Apr  7 19:05:33 2017
  read : io=39322MB, bw=4915.3MB/s, iops=1258.3K, runt=  8000msec
    clat (usec): min=0, max=57, avg= 0.31, stdev= 0.12
     lat (usec): min=0, max=57, avg= 0.45, stdev= 0.14
    clat percentiles (usec):
     |  1.00th=[    0],  5.00th=[    0], 10.00th=[    0], 20.00th=[    0],
     | 30.00th=[    0], 40.00th=[    0], 50.00th=[    0], 60.00th=[    0],
     | 70.00th=[    1], 80.00th=[    1], 90.00th=[    1], 95.00th=[    1],
     | 99.00th=[    1], 99.50th=[    1], 99.90th=[    1], 99.95th=[    2],
     | 99.99th=[   10]
    bw (MB  /s): min= 4805, max= 5012, per=100.00%, avg=4915.22, stdev=61.41
    lat (usec) : 2=99.98%, 4=0.01%, 10=0.01%, 20=0.01%, 50=0.01%
    lat (usec) : 100=0.01%
  cpu          : usr=99.84%, sys=0.11%, ctx=13, majf=0, minf=10
  IO depths    : 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%
     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     issued    : total=r=10066330/w=0/d=0, short=r=0/w=0/d=0, drop=r=0/w=0/d=0
     latency   : target=0, window=0, percentile=100.00%, depth=1

Run status group 0 (all jobs):
   READ: io=39322MB, aggrb=4915.3MB/s, minb=4915.3MB/s, maxb=4915.3MB/s, mint=8000msec, maxt=8000msec
"""


def test_fio2_million_iops_upper_case_k_is_read() -> None:
    """Refused before as `a form podtax does not read` (the pattern knew only a lower-case k)."""
    values = parse_text(FIO_2_2_10_MEGA_IOPS, "fio").values()
    assert values["read_iops"] == pytest.approx(10066330e3 / 8000)  # `iops=1258.3K`: its issued over its runt
    assert values["read_bw"] == pytest.approx(4915.3 * 1024)
    assert values["read_clat_mean"] == pytest.approx(0.31)


# sysbench 1.0.4 (tag 1.0.4), src/tests/memory/sb_memory.c memory_report_cumulative:
# `log_text(LOG_NOTICE, "Operations performed: %d (%8.2f ops/sec)\n", total_ops, ...)` (total_ops an unsigned int),
# then `"%4.2f MiB transferred (%4.2f MiB/sec)\n"`; the block size, total size and operation are LOG_INFO lines, not
# printed at the default verbosity. The rest from src/sysbench.c at 1.0.4 (print_header, print_run_mode,
# sb_report_cumulative: `%10.2f` latencies). 1.0.5 (a0658f0) renamed the line `Total operations: %PRIu64 (%8.2f per
# second)`. Figures: this host's 1.0.20 `memory --memory-oper=write --threads=1 --time=3` run, in the 1.0.4 layout.
SYSBENCH_1_0_4_MEMORY = """\
sysbench 1.0.4 (using bundled LuaJIT 2.1.0-beta2)

Running the test with following options:
Number of threads: 1
Initializing random number generator from current time


Initializing worker threads...

Threads started!

Operations performed: 21672955 (7222554.38 ops/sec)

21165.00 MiB transferred (7053.28 MiB/sec)


General statistics:
    total time:                          3.0001s
    total number of events:              21672955

Latency (ms):
         min:                                  0.00
         avg:                                  0.00
         max:                                  0.12
         95th percentile:                      0.00
         sum:                               1094.69

Threads fairness:
    events (avg/stddev):           21672955.0000/0.00
    execution time (avg/stddev):   1.0947/0.00
"""
_MIB_LINE = "21165.00 MiB transferred (7053.28 MiB/sec)\n\n"


def test_sysbench_1_0_4_memory_operations_performed_is_read() -> None:
    """Refused before as `truncated` (`no Total operations line: the run did not finish or its output was cut`)."""
    values = parse_run("sysbench-memory", SYSBENCH_1_0_4_MEMORY).values()
    assert values["mib_per_second"] == 7053.28 and values["operations_per_second"] == 7222554.38
    assert values["operations"] == values["events"] == 21672955


def test_sysbench_1_0_4_memory_oper_none_is_read_without_mib() -> None:
    """`--memory-oper=none` in 1.0.4: no MiB line and no `operation: none` echo; before, `a run of another test`."""
    values = parse_text(SYSBENCH_1_0_4_MEMORY.replace(_MIB_LINE, ""), "sysbench").values()
    assert values["operations_per_second"] == 7222554.38 and "mib_per_second" not in values


@pytest.mark.parametrize("count", ["-2102345678", "1234567"])
def test_sysbench_1_0_4_memory_wrapped_counter_is_refused(count: str) -> None:
    """The 32-bit counter printed with %d: negative past 2^31, wrapped past 2^32 (its ops/sec then wrong too)."""
    text = SYSBENCH_1_0_4_MEMORY.replace("performed: 21672955 ", f"performed: {count} ")
    with pytest.raises(ParseFailure, match="32-bit operation counter wrapped") as failure:
        parse_text(text, "sysbench")
    assert failure.value.reason == "unknown-format"


# stress-ng V0.21.04 (3924570e0, `stress-ng: convert % to percent in yaml tags`), stress_description_yamlify: a `%` in
# a miscellaneous metric's description is written `percent` in its --yaml key; up to 0.21.03 it was dropped. dirmany's
# `stress_metrics_set(args, "% of time creating files", ...)` is keyed `-of-time-creating-files` up to 0.21.03 and
# `percent-of-time-creating-files` from 0.21.04; the NUMA stressor's 41-character description is cut at 39 either way
# (`-of-checked-pages-on-specified-numa-nod`, `percent-of-checked-pages-on-specified-n`). The row's other keys are in
# the form stress_metrics_dump prints (`%f`), figures made up.
_DIRMANY_ROW = """\
---
system-info:
      stress-ng-version: {version}
      cpus: 2

metrics:
    - stressor: dirmany
      bogo-ops: 130722
      bogo-ops-per-second-usr-sys-time: 65512.406353
      bogo-ops-per-second-real-time: 65351.709466
      wall-clock-time: 2.000300
      user-time: 0.210000
      system-time: 1.785400
      cpu-usage-per-instance: 99.754787
      max-rss: 3140
      {percent}-of-time-creating-files: 47.512300
      {percent}-of-checked-pages-on-specified-{numa}: 12.500000

...
"""


def test_stressng_0_21_04_percent_yaml_keys_name_metrics_as_before() -> None:
    """Before, 0.21.04's keys gave other names (`percent_of_time_creating_files`, unit `percent of time ...`) than
    the table and earlier reports of the same metric (`of_time_creating_files`, unit `% of time creating files`)."""
    old = parse_text(_DIRMANY_ROW.format(version="0.21.03", percent="", numa="numa-nod"), "stress-ng")
    new = parse_text(_DIRMANY_ROW.format(version="0.21.04", percent="percent", numa="n"), "stress-ng")
    named = {m.name: (m.value, m.unit) for m in new.metrics}
    assert named == {m.name: (m.value, m.unit) for m in old.metrics}
    assert named["of_time_creating_files"] == (47.5123, "% of time creating files")
    assert named["of_checked_pages_on_specified_numa_node"] == (12.5, "% of checked pages on specified NUMA node")


# stress-ng stress_metrics_dump, among the miscellaneous metrics, before a stressor's own when it set more than it
# keeps: V0.17.08 `pr_metrics("note: %zd metrics were set, only reporting first %zd metrics\n", ...)` (fc706297a),
# V0.20.00 on `pr_metrics("note: only reporting first %zu metrics\n", ...)` (3f601ba67). Rows and metrics in the
# `%-13s %9" PRIu64 " %9.2f ...` and `%-13s %13.2f %s (geometric mean of %" PRId32 " instance%s)` forms; figures
# made up.
_NOTED = """\
stress-ng: info:  [4242] setting to a 10 second run per stressor
stress-ng: info:  [4242] dispatching hogs: 1 matrix
stress-ng: metrc: [4242] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
stress-ng: metrc: [4242]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
stress-ng: metrc: [4242] matrix            21170     10.00      9.98      0.01      2116.99        2119.12
stress-ng: metrc: [4242] miscellaneous metrics:
stress-ng: metrc: [4242] {note}
stress-ng: metrc: [4242] matrix           385960.20 add matrix ops per sec (geometric mean of 1 instance)
stress-ng: metrc: [4242] matrix           661874.77 copy matrix ops per sec (geometric mean of 1 instance)
stress-ng: info:  [4242] skipped: 0
stress-ng: info:  [4242] passed: 1: matrix (1)
stress-ng: info:  [4242] failed: 0
stress-ng: info:  [4242] metrics untrustworthy: 0
stress-ng: info:  [4242] successful run completed in 10.00 secs
"""
_CHATTER = "stress-ng: info:  [4243] matrix: using method 'all'\n" * 200  # a long log: read by the fast path


@pytest.mark.parametrize("note", ["note: 97 metrics were set, only reporting first 96 metrics",
                                  "note: only reporting first 96 metrics"])
@pytest.mark.parametrize("long_log", [False, True])
def test_stressng_metrics_overflow_note_is_no_metric(note: str, long_log: bool) -> None:
    """Before, 0.17's note became a metric `note_metrics_were_set_only_reporting_first_96_metrics` of 97, and 0.20's
    ended the miscellaneous metrics: the stressor's own, after it, were lost."""
    text = _NOTED.format(note=note)
    if long_log:
        text = text.replace("stress-ng: metrc: [4242] stressor", _CHATTER + "stress-ng: metrc: [4242] stressor")
    values = parse_text(text, "stress-ng").values()
    assert values["add_matrix_ops_per_sec"] == 385960.20 and values["copy_matrix_ops_per_sec"] == 661874.77
    assert not [name for name in values if "note" in name or "reporting" in name]


def test_sysbench_1_0_4_memory_cut_before_events_is_truncated() -> None:
    """A 1.0.4 log cut before `total number of events`: refused before as a wrapped counter (unknown-format)."""
    text = SYSBENCH_1_0_4_MEMORY.replace("    total number of events:              21672955\n", "")
    assert "total number of events" not in text
    with pytest.raises(ParseFailure, match="total number of events") as failure:
        parse_text(text, "sysbench")
    assert failure.value.reason == "truncated"
