"""Table-driven tests of the tricky formats and of every failure reason."""

from __future__ import annotations

import json

import pytest
from podtax.parsers import PARSER_VERSION, ParseFailure, parse_run, parse_text

HDPARM_KB = " Timing buffered disk reads:   2 MB in  3.42 seconds = 598.83 kB/sec\n"
HDPARM_DIRECT = ("\n/dev/sdb:\n Timing O_DIRECT cached reads:   2468 MB in  2.00 seconds = 1233.95 MB/sec\n"
                 " Timing O_DIRECT disk reads: 334 MB in  3.01 seconds = 110.96 MB/sec\n")
HDPARM_NOISE = ("\n/dev/mmcblk0p2:\n HDIO_DRIVE_CMD(identify) failed: Invalid argument\n"
                " Timing buffered disk reads:  74 MB in  3.01 seconds =  24.59 MB/sec\n")
HEADER = ("stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s",
          "                          (secs)    (secs)    (secs)   (real time) (usr+sys time)")
ROW = "cpu                3540      2.00      2.00      0.00      1769.62        1770.35"


def stress(prefix: str, lines: list[str]) -> str:
    return "".join(f"stress-ng: {prefix} [7119] {line}\n" for line in lines)


AFTER = stress("info: ", ["dispatching hogs: 1 cpu"]) + stress("metrc:", [*HEADER, ROW]) + \
    stress("info: ", ["successful run completed in 2.00s"])
BEFORE = stress("info: ", ["dispatching hogs: 1 cpu", "successful run completed in 2.00s", *HEADER, ROW])
WIDE = stress("info: ", [*HEADER, "remap-file-pages      8820     10.01      4.99     75.00       881.44       110.26",
                         ROW])


def sysbench_cpu(events: int = 150, threads: int = 1) -> str:
    return f"""sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: {threads}
Prime numbers limit: 10000

Threads started!

CPU speed:
    events per second:   {events / 10.0004:.2f}

General statistics:
    total time:                          10.0004s
    total number of events:              {events}

Latency (ms):
         min:                                    1.00
         avg:                                    1.10
         max:                                    2.00
         95th percentile:                        1.20
         sum:                                  165.00
"""


@pytest.mark.parametrize(("text", "tool", "name", "value"), [
    (HDPARM_KB, "hdparm", "read_mb_per_second", 598.83 / 1024),
    (HDPARM_DIRECT, "hdparm", "direct_cached_read_mb_per_second", 1233.95),
    (HDPARM_DIRECT, "hdparm", "read_mb_per_second", 110.96),
    (HDPARM_NOISE, None, "read_mb_per_second", 24.59),
    (AFTER, "stress-ng-cpu", "bogo_ops_per_second_real", 1769.62),
    (BEFORE, "stress-ng-cpu", "bogo_ops_per_second_real", 1769.62),
    (AFTER.replace("metrc:", "info: "), None, "bogo_ops", 3540),
    (WIDE, "stress-ng-cpu", "remap_file_pages_bogo_ops", 8820),
    (WIDE, "stress-ng-cpu", "usr_time", 2.0),
    (AFTER.replace("\n", "\r\n").replace("dispatching", "🐢💥 dispatching"), None, "bogo_ops", 3540),
    ("#podtax phase=before tool_version='stress-ng 0.15.06'\n" + AFTER + "#podtax phase=after nr_throttled=1\n",
     None, "bogo_ops_per_second_usr_sys", 1770.35),
    (sysbench_cpu(), "sysbench-cpu", "latency_p95", 1.2),
    (sysbench_cpu().replace("\n", "\r\n"), None, "events_per_second", 15.0),
])
def test_figure(text: str, tool: str | None, name: str, value: float) -> None:
    assert parse_text(text, tool).values()[name] == pytest.approx(value)


def test_yaml_report() -> None:
    text = ("---\nsystem-info:\n      stress-ng-version: '0.21.03'\n      compiler: 'gcc 14.3.1'\nmetrics:\n"
            "    - stressor: cpu\n      bogo-ops: 100\n      bogo-ops-per-second-usr-sys-time: 50.5\n"
            "      bogo-ops-per-second-real-time: 49.5\n      wall-clock-time: 2.02\n      user-time: 1.98\n"
            "      system-time: 0.0\n      instances:\n          - instance: 0\n            bogo-ops: 100\n...\n")
    parsed = parse_text(text, "stress-ng-cpu")
    assert parsed.values() == {"bogo_ops": 100, "real_time": 2.02, "usr_time": 1.98, "sys_time": 0.0,
                               "bogo_ops_per_second_real": 49.5, "bogo_ops_per_second_usr_sys": 50.5}
    assert (parsed.tool_version, parsed.tool_build) == ("0.21.03", "gcc 14.3.1")


def _fail(fn, *args, **kwargs) -> ParseFailure:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseFailure) as info:
        fn(*args, **kwargs)
    assert info.value.detail and info.value.reason in info.value.args[0]
    return info.value


@pytest.mark.parametrize(("test", "stdout", "stderr", "code", "reason"), [
    ("sysbench-cpu", "", "", 0, "empty"),
    ("sysbench-cpu", "  \n", "", 1, "nonzero-exit"),
    ("sysbench-cpu", sysbench_cpu(), "", 1, "nonzero-exit"),
    ("sysbench-cpu", sysbench_cpu(), "", None, "nonzero-exit"),
    ("sysbench-cpu", "sysbench 1.0.20 (x)\n\nFATAL: Cannot find benchmark 'x'\n", "", 1, "bad-argument"),
    ("sysbench-cpu", "sysbench 1.0.20 (x)\n\n", "invalid option: --foo\n", 1, "bad-argument"),
    ("sysbench-cpu", sysbench_cpu().split("General statistics")[0], "", 0, "truncated"),
    ("sysbench-cpu", sysbench_cpu().split("Latency")[0], "", 0, "truncated"),
    ("sysbench-memory", sysbench_cpu(), "", 0, "wrong-tool"),
    ("sysbench-cpu", AFTER, "", 0, "wrong-tool"),
    ("sysbench-cpu", "sysbench 0.4.12:  multi-threaded system evaluation benchmark\n\nDone.\n", "", 0,
     "unsupported-version"),
    ("sysbench-cpu", "hello world\n", "", 0, "unknown-format"),
    ("stress-ng-cpu", "", stress("info: ", ["dispatching hogs: 1 cpu"]), 0, "truncated"),
    ("stress-ng-cpu", "", stress("info: ", [*HEADER]), 0, "truncated"),
    ("stress-ng-cpu", "", stress("info: ", ["dispatching hogs: 1 cpu", "successful run completed in 1s"]), 0,
     "unknown-format"),
    ("stress-ng-cpu", "", stress("error:", ["cpu: failed to start"]), 2, "fatal"),
    ("stress-ng-cpu", "", "stress-ng: unrecognized option '--x'\nTry 'stress-ng --help' for more information.\n",
     1, "bad-argument"),
    ("stress-ng-cpu", "", WIDE.replace("cpu  ", "qsort"), 0, "wrong-tool"),
    ("hdparm", "/dev/vda: Operation not permitted\n", "", 1, "permission-denied"),
    ("hdparm", "\n/dev/sda:\n", "", 0, "truncated"),
    ("hdparm", HDPARM_KB, "", 0, "truncated"),  # mode=cached requested (template default) but only -t ran
    ("fio", '{"fio version" : "fio-3.33", "jobs" : [ {"jobname": "x"', "", 0, "truncated"),
    ("fio", '{"fio version" : "fio-3.33", "jobs" : [ {"jobname": "x", "error": 13}]}', "", 1, "permission-denied"),
    ("fio", '{"fio version" : "fio-3.33", "jobs" : [ {"jobname": "x", "error": 5}]}', "", 0, "fatal"),
    ("volume-churn", "x", "", 0, "unknown-format"),
])
def test_failure_reason(test: str, stdout: str, stderr: str, code: int | None, reason: str) -> None:
    requested = {"mode": "cached"} if test == "hdparm" else None
    assert _fail(parse_run, test, stdout, stderr, code, requested).reason == reason


def test_flags_short_and_threads() -> None:
    parsed = parse_run("sysbench-cpu", sysbench_cpu(events=150, threads=2),
                       requested={"threads": 4, "events": 10000, "time": 10, "max_prime": 10000})
    assert "SHORT: sysbench ran 150 of the 10000 requested events before its 10 s time limit" in parsed.flags
    assert any(f.startswith("THREADS_MISMATCH") for f in parsed.flags)
    ok = parse_run("sysbench-cpu", sysbench_cpu(events=10000), requested={"threads": 1, "events": 10000})
    assert ok.flags == ()
    ng = parse_run("stress-ng-cpu", "", AFTER, requested={"threads": 2, "ops": 5000})
    assert any(f.startswith("SHORT: stress-ng ran 3540 of the 5000") for f in ng.flags)
    assert any(f.startswith("THREADS_MISMATCH") for f in ng.flags)
    prime = parse_run("sysbench-cpu", sysbench_cpu(), requested={"max_prime": 20000})
    assert any(f.startswith("PARAM_MISMATCH: max_prime") for f in prime.flags)


def _fio_job(name: str, iops: float, bw: int, rw: str = "read") -> dict[str, object]:
    stats = {"io_bytes": 4096, "total_ios": 1, "iops": iops, "bw": bw,
             "clat_ns": {"min": 1000, "max": 3000, "mean": 2000.0, "percentile": {"99.900000": 2500}}}
    empty = {"io_bytes": 0, "total_ios": 0, "iops": 0.0, "bw": 0}
    return {"jobname": name, "error": 0, "job options": {"rw": rw},
            "read": stats if rw == "read" else empty, "write": stats if rw == "write" else empty}


def test_fio_several_jobs_are_prefixed_and_summed() -> None:
    doc = {"fio version": "fio-3.33", "global options": {"bs": "4k"},
           "jobs": [_fio_job("a", 100.0, 400), _fio_job("a", 50.0, 200), _fio_job("b-c", 1.0, 4)]}
    text = "note: a warning before the report\n" + json.dumps(doc)
    values = parse_run("fio", text, requested={"rw": "read"}).values()
    assert values["read_iops"] == 151 and values["read_bw"] == 604
    assert values["a_0_read_iops"] == 100 and values["a_1_read_iops"] == 50 and values["b_c_read_iops"] == 1
    assert values["a_0_read_clat_p99_9"] == 2.5 and "read_clat_p99_9" not in values
    failure = _fail(parse_run, "fio", json.dumps(doc), requested={"rw": "write"})
    assert failure.reason == "unknown-format"
    write = parse_run("fio", json.dumps({"fio version": "fio-3.33", "jobs": [_fio_job("w", 9.0, 36, "write")]}),
                      requested={"rw": "randwrite"})
    assert write.values()["write_iops"] == 9 and write.echoed["rw"] == "write"


def test_autodetect_and_tool_names() -> None:
    assert parse_text(AFTER).tool == "stress-ng"
    assert parse_text(AFTER, "stressng").tool == "stress-ng"
    assert parse_text(sysbench_cpu(), "sysbench").echoed["test"] == "cpu"
    with pytest.raises(ValueError):
        parse_text(AFTER, "nosuchtool")
    assert _fail(parse_text, "").reason == "empty"
    assert _fail(parse_text, "just words\n").reason == "unknown-format"
    assert PARSER_VERSION == "1.0.0"


@pytest.mark.parametrize("printed, refused", [
    ("0.00", True),      # an audit's forged log: no work a second beside 10,000 events in 10 s
    ("1199.95", True),   # 20% more than 10,000 events in 10.0004 s
    ("1049.96", False),  # 5%: within what a real report's two timers allow
    ("999.96", False),
])
def test_a_rate_that_disagrees_with_its_count_and_time_is_refused(printed: str, refused: bool) -> None:
    text = sysbench_cpu(events=10000).replace("events per second:   999.96", f"events per second:   {printed}")
    if refused:
        assert _fail(parse_text, text, "sysbench-cpu").reason == "unknown-format"
        with pytest.raises(ParseFailure, match="figures disagree: 10000 events in 10.0004 s is 999.96 a second"):
            parse_text(text, "sysbench-cpu")
    else:
        assert parse_text(text, "sysbench-cpu").values()["events_per_second"] == float(printed)
