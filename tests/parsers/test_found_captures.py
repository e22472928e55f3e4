"""The parsers on real captures from other machines (tests/corpus-found/, sources in its README):
each gives the figures its log prints, or is refused with a reason that names what happened."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus-found"


def parse(name: str, tool: str | None = None):  # noqa: ANN201 - a Parsed
    return parse_text((CORPUS / name).read_text(encoding="utf-8"), tool)


@pytest.mark.parametrize("tool", [None, "sysbench-cpu"])
def test_sysbench_1_1_reads_time_elapsed_as_the_total_time(tool: str | None) -> None:
    parsed = parse("sysbench-1.1-cpu-ec2.log", tool)
    assert parsed.tool_version == "1.1.0-bbee5d5"
    assert parsed.values() == {"events_per_second": 114.08, "total_time": 10.0022, "events": 1141,
                               "latency_min": 8.76, "latency_avg": 8.77, "latency_max": 8.78,
                               "latency_p95": 8.74}


def test_sysbench_1_1_memory_report() -> None:
    text = (CORPUS / "sysbench-1.1-cpu-ec2.log").read_text(encoding="utf-8")
    banner = text.split("\n", 1)[0]
    memory = banner + """
Running the test with following options:
Number of threads: 16
Running memory speed test with the following options:
  block size: 8KiB
  total size: 2048MiB
  operation: write
  scope: global
Threads started!
Total operations: 262144 (935770.17 per second)
2048.00 MiB transferred (7310.70 MiB/sec)
Throughput:
    events/s (eps):                      935770.1744
    time elapsed:                        0.2801s
    total number of events:              262144
Latency (ms):
         min:                                    0.00
         avg:                                    0.01
         max:                                    9.11
         95th percentile:                        0.02
         sum:                                 3726.24
"""
    values = parse_text(memory, "sysbench-memory").values()
    assert values["mib_per_second"] == 7310.70 and values["total_time"] == 0.2801
    cut = memory.replace("    time elapsed:                        0.2801s\n", "")
    with pytest.raises(ParseFailure) as failure:
        parse_text(cut, "sysbench-memory")
    assert failure.value.reason == "truncated" and "total time" in failure.value.detail


@pytest.mark.parametrize("name, usr_sys", [("stress-ng-journalctl.log", 1581.53),
                                           ("stress-ng-kmsg-interleaved.log", 13.02)])
def test_stress_ng_lines_behind_a_log_collectors_prefix(name: str, usr_sys: float) -> None:
    for tool in (None, "stress-ng"):
        parsed = parse(name, tool)
        assert parsed.values()["bogo_ops_per_second_usr_sys"] == usr_sys
        assert parsed.flags == ()
    assert parse("stress-ng-kmsg-interleaved.log").values()["sysfs_files_exercised_per_sec"] == 188.37


def test_a_failed_stressor_is_flagged_not_called_a_bad_argument() -> None:
    parsed = parse("stress-ng-cygwin-timestamp-failed.log", "stress-ng")
    assert parsed.values()["bogo_ops_per_second_real"] == 31888.38
    assert parsed.flags[0] == "FAILED: stress-ng reported 2 failed stressor instance(s)"
    assert "clock_settime was able to set an invalid negative time" in parsed.flags[1]


def test_a_stress_ng_line_saying_invalid_without_a_pid_is_still_a_bad_argument() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse_text("stress-ng: invalid value for --cpu-load\n", "stress-ng")
    assert failure.value.reason == "bad-argument"


def test_zero_bogo_ops_is_refused_not_read_as_a_rate_of_zero() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("stress-ng-zero-bogo-ops.log", "stress-ng")
    assert failure.value.reason == "fatal"
    assert "sctp stressor completed 0 bogo ops in 60 s" in failure.value.detail


def test_a_zero_row_beside_working_rows_is_flagged() -> None:
    text = (CORPUS / "stress-ng-zero-bogo-ops.log").read_text(encoding="utf-8")
    row = "stress-ng: info:  [4148] sctp                  0     60.00      0.03      0.01         0.00           0.00\n"
    cpu = row.replace("sctp                  0", "cpu                 100")
    cpu = cpu.replace("0.00           0.00", "1.67   2500.00")  # 100 / 60.00 s, 100 / (0.03 + 0.01) s
    both = text.replace("hogs: 64 sctp", "hogs: 64 sctp, 1 cpu").replace(row, row + cpu)
    parsed = parse_text(both, "stress-ng")
    # the idle row gives no bogo-op figure (as in the run's --yaml report, which cannot tell it from a skipped one)
    assert parsed.values()["cpu_bogo_ops"] == 100 and not [k for k in parsed.values() if k.startswith("sctp")]
    assert "NO_WORK: stress-ng's sctp stressor completed 0 bogo ops; its bogo-op figures are not read" in parsed.flags
    with pytest.raises(ParseFailure) as failure:  # the cpu test's own row must not be the idle one
        parse_text(both.replace(" cpu                 100", " cpu                   0")
                   .replace("1.67   2500.00", "0.00   0.00"), "stress-ng-cpu")
    assert failure.value.reason == "fatal"


def test_a_dispatched_stressor_without_a_row_is_flagged() -> None:
    parsed = parse("stress-ng-0.03-missing-row.log", "stress-ng")
    assert parsed.echoed["stressors"] == "cpu,fork,hdd,switch"
    assert parsed.flags == ("MISSING: stress-ng dispatched vm but printed no metrics row for it "
                            "(skipped, failed to start or killed?)",)


def test_an_old_per_stressor_metric_after_its_row_is_read() -> None:
    parsed = parse("stress-ng-vdso-misc-old.log", "stress-ng")
    metric = parsed.metric("nanoseconds_per_call")
    assert (metric.value, metric.unit, metric.higher_is_better) == (9.88, "nanoseconds per call", False)
    assert parsed.values()["bogo_ops_per_second_real"] == 84375055.96


def test_fio_groups_are_summed_per_group_and_padding_percentiles_dropped() -> None:
    parsed = parse("fio-2.17-two-groups.json")
    values = parsed.values()
    assert values["group0_read_iops"] == pytest.approx(8086.673998)
    assert values["group1_write_iops"] == pytest.approx(2457.017193)
    assert "read_iops" not in values and "write_iops" not in values  # no total over jobs that ran apart
    assert not [name for name in values if name.endswith("_p0")]
    assert parsed.flags[0].startswith("GROUPS: the jobs ran in 2 groups")
    with pytest.raises(ParseFailure) as failure:  # the template's figure stands for no group
        parse("fio-2.17-two-groups.json", "fio")
    assert "2 groups" in failure.value.detail and "one group per log" in failure.value.detail
    five = parse("fio-2.1.4-five-groups.json").values()
    assert (five["group2_write_iops"], five["group3_read_iops"], five["group4_read_iops"]) == (1610, 317, 323)


@pytest.mark.parametrize("name", ["fio-3.40-clat-above-lat.json", "fio-3.40-clat-above-lat-text.log"])
def test_fio_clat_above_lat_is_left_out_and_flagged(name: str) -> None:
    parsed = parse(name)
    values = parsed.values()
    text = 240792e3 / 10001  # `IOPS=24.1k`: its issued over its runtime
    assert values["group0_read_iops"] == pytest.approx(24076.792321 if name.endswith("json") else text)
    assert not [metric for metric in values if "clat" in metric]  # 5.19 s mean clat under an 82 µs lat
    flag = next(f for f in parsed.flags if f.startswith("INCONSISTENT_LATENCY: "))
    assert "randread" in flag and "randwrite" in flag and "82.35" in flag


def test_fio_options_that_differ_across_jobs_are_all_echoed() -> None:
    three = parse("fio-3.16-three-groups-numjobs.json")
    assert three.echoed["numjobs"] == "1,5,10" and three.echoed["rw"] == "randrw"  # not the first job's 1
    assert parse("fio-2.17-two-groups.json").echoed["rw"] == "randread,randwrite"
    assert parse("fio-3.40-clat-above-lat.json").echoed["iodepth"] == 2  # shared by both jobs: as it is


def test_fio_clat_within_lat_is_kept() -> None:
    report = (CORPUS / "fio-3.40-clat-above-lat.json").read_text(encoding="utf-8")
    sane = report.replace('"mean" : 5191564752.380984', '"mean" : 81000.0')
    assert sane != report
    values = parse_text(sane).values()
    assert values["randread_read_clat_mean"] == 81.0 and "randwrite_write_clat_mean" not in values


def test_fio_latency_not_measured_is_left_out_not_zero() -> None:
    values = parse("fio-3.20-gtod-reduce.json", "fio").values()
    assert values["read_iops"] == pytest.approx(982.05078)
    assert not [name for name in values if "clat" in name]


def test_fio_2_0_text_keeps_read_and_write_apart() -> None:
    values = parse("fio-2.0.15-randrw-text.log", "fio").values()
    # printed `iops=170`, `iops=43`: fio's whole numbers; exactly its I/Os over its runtime (`issued`, `runt=`)
    assert (values["read_iops"], values["write_iops"]) == (pytest.approx(54217 / 318.686),
                                                           pytest.approx(13770 / 318.686))
    assert values["write_bw"] == pytest.approx(269100 / 1024)
    assert (values["read_clat_p5"], values["write_clat_p5"]) == (21000, 18000)  # msec -> µs, each its own
    assert (values["read_clat_min"], values["read_clat_mean"]) == (22, 300904.66)


def test_fio_text_direction_line_podtax_cannot_read_is_refused() -> None:
    text = (CORPUS / "fio-2.0.15-randrw-text.log").read_text(encoding="utf-8")
    with pytest.raises(ParseFailure) as failure:
        parse_text(text.replace("bw=269100 B/s", "bw=269100 bytes/s"), "fio")
    assert failure.value.reason == "unknown-format" and "write line" in failure.value.detail


def test_fio_2_2_write_only_text_with_the_template_name() -> None:
    parsed = parse("fio-2.2.10-randwrite-text.log", "fio")
    assert parsed.echoed["rw"] == "randwrite"
    assert parsed.values()["write_iops"] == pytest.approx(1048576e3 / 134412)  # `iops=7801`: its issued over its runt


@pytest.mark.parametrize("name, figures", [
    ("sockperf-3.10-extended-stats.log", {"rtt_avg_us": 57.265, "rtt_p50_us": 49.557, "rtt_min_us": 34.955}),
    ("sockperf-3.7-crlf-no-final-newline.log", {"rtt_avg_us": 45.237, "rtt_p50_us": 44.633, "rtt_min_us": 34.918}),
    ("sockperf-one-way-no-banner.log", {"latency_avg_us": 65.325, "latency_p50_us": 64.66}),
    ("sockperf-avg-lat-ansi.log", {"latency_avg_us": 117.369, "latency_p50_us": 117.352}),
])
def test_sockperf_reports_of_other_versions(name: str, figures: dict[str, float]) -> None:
    values = parse(name).values()  # recognized without --tool, banner or not
    assert {key: values[key] for key in figures} == figures


def test_sockperf_cut_inside_its_last_figure_still_loses_it() -> None:
    text = (CORPUS / "sockperf-3.7-crlf-no-final-newline.log").read_text(encoding="utf-8")
    assert "rtt_min_us" not in parse_text(text[:-1], "sockperf").values()  # `34.91`: maybe cut


def test_sockperf_one_way_report_names_full_rtt() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("sockperf-one-way-no-banner.log", "sockperf")
    assert "rerun with --full-rtt" in failure.value.detail


def test_iperf3_old_udp_layout_is_named_not_called_cut() -> None:
    """Before 3.11 a UDP report has one end.sum: the sender's rate, the receiver's jitter and loss."""
    parsed = parse("iperf3-3.1.3-udp.json")
    assert parsed.values() == {"sent_mbps": pytest.approx(834.711189017), "jitter_ms": 0.092,
                               "lost_percent": pytest.approx(0.690276)}
    assert parsed.flags[0].startswith("SENDER_ONLY: ")
    with pytest.raises(ParseFailure) as failure:  # the template's figure is the receiver's throughput
        parse("iperf3-3.1.3-udp.json", "iperf3")
    assert "no throughput_mbps figure" in failure.value.detail and "3.11 or later" in failure.value.detail
    reverse = (CORPUS / "iperf3-3.1.3-udp.json").read_text(encoding="utf-8").replace('"reverse":\t0', '"reverse":\t1')
    with pytest.raises(ParseFailure) as failure:
        parse_text(reverse)
    assert failure.value.reason == "unsupported-version" and "3.1.3 reverse UDP" in failure.value.detail
    with pytest.raises(ParseFailure) as text:
        parse("iperf3-3.1.3-udp-text.log")
    assert "rerun iperf3 with -J" in text.value.detail
    with pytest.raises(ParseFailure) as empty:
        parse("iperf3-3.9-empty.json", "iperf3")
    assert "stopped before the test ran" in empty.value.detail


def test_fio_text_jobs_in_two_groups_are_summed_per_group() -> None:
    text = (CORPUS / "fio-2.0.15-randrw-text.log").read_text(encoding="utf-8")
    job = text[text.index("iometer: (groupid=0"):text.index("  cpu ")]
    second = job.replace("iometer: (groupid=0", "second: (groupid=1").replace("iops=170 ", "iops=100 ")
    parsed = parse_text(text.replace(job, job + second))
    values = parsed.values()
    assert (values["group0_read_iops"], values["group1_read_iops"]) == (170, 100)
    assert "read_iops" not in values and parsed.flags[1].startswith("GROUPS: the jobs ran in 2 groups")
    same = parse_text(text.replace(job, job + second.replace("(groupid=1", "(groupid=0")))
    assert same.values()["read_iops"] == 270  # side by side: one total; fio's summary, of one job, says less,
    assert [f.split(":")[0] for f in same.flags] == ["TEXT_OUTPUT", "STAGGERED", "STAGGERED"]  # for read and write


def test_two_interleaved_runs_are_refused_with_both_tables_seen() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("stress-ng-two-runs-prompt-glued.log", "stress-ng")
    assert failure.value.reason == "unknown-format"
    assert "the vm stressor reported 2 times" in failure.value.detail  # the glued table's row is read too


def test_stress_ng_misc_rates_per_second_are_higher_is_better() -> None:
    parsed = parse("stress-ng-0.17-seq24-misc-rates.log", "stress-ng")
    fp = parsed.metric("fp_mfp_ops_per_sec_float64_add")
    cache = parsed.metric("cache_cache_ops_per_second")
    assert (fp.value, fp.unit, fp.higher_is_better) == (797.47, "Mfp-ops/s", True)
    assert (cache.value, cache.unit, cache.higher_is_better) == (3558855.28, "cache ops/s", True)


def test_stress_ng_skipped_instances_flagged_and_version_read() -> None:
    parsed = parse("stress-ng-0.19-verbose-skipped.log", "stress-ng-cpu")
    assert parsed.tool_version == "0.19.02" and parsed.values()["bogo_ops"] == 58940
    assert [f for f in parsed.flags if f.startswith("SKIPPED: stress-ng skipped 1 stressor instance(s)")]


@pytest.mark.parametrize("name, reason, words", [
    ("stress-ng-oom-killed.log", "truncated", "no `run completed` line (killed"),
    ("stress-ng-vm-skipped.log", "fatal", "skipped its stressor (1 instance(s) skipped, none passed)"),
    ("hdparm-read-failed.log", "fatal", "could not read /dev/cdrom: read() failed: Input/output error"),
    ("iperf3-3.22-server-side.json", "unknown-format", "server's report"),
    ("fio-3.43-client-server.json", "unknown-format", "client/server report (--client)"),
])
def test_refusals_say_what_happened(name: str, reason: str, words: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse(name)
    assert failure.value.reason == reason and words in failure.value.detail


def test_stress_ng_error_before_any_stressor_started_stays_fatal() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse_text("stress-ng: error: [7119] cpu: failed to start\n", "stress-ng")
    assert failure.value.reason == "fatal"


def test_sysbench_1_1_build_without_cpu_speed_derives_the_rate_and_says_so() -> None:
    parsed = parse("sysbench-1.1-dev-no-cpu-speed.log", "sysbench-cpu")
    assert parsed.values()["events_per_second"] == round(314 / 10.0103, 2)
    assert parsed.flags[0].startswith("DERIVED: events_per_second = total number of events / total time")


def test_hdparm_5_buffer_cache_label_is_the_cached_timing() -> None:
    text = (CORPUS / "hdparm-5-buffer-cache.log").read_text(encoding="utf-8")
    values = parse_text(text[:text.index("/dev/sdb")], "hdparm").values()
    assert (values["cached_read_mb_per_second"], values["disk_read_mb_per_second"]) == (576.0, 59.8)
    with pytest.raises(ParseFailure) as failure:  # two devices in one log
        parse_text(text, "hdparm")
    assert "2 devices" in failure.value.detail


@pytest.mark.parametrize("name, udp", [("iperf3-3.22-tcp-bidir.json", False), ("iperf3-3.22-udp-bidir.json", True)])
def test_iperf3_bidir_reports_both_directions(name: str, udp: bool) -> None:
    parsed = parse(name, "iperf3")
    values = parsed.values()
    assert values["reverse_throughput_mbps"] > 0 and values["throughput_mbps"] > 0
    assert ("reverse_jitter_ms" in values) is udp
    assert parsed.echoed["bidir"] == 1 and parsed.flags[0].startswith("BIDIR: ")


def test_fio_json_after_other_output_with_braces_is_found() -> None:
    for tool in (None, "fio"):
        values = parse("fio-3.28-json-in-kubectl-logs.log", tool).values()
        assert (values["read_iops"], values["write_iops"]) == (170075.741182, 56839.645098)


def test_stress_ng_yaml_gives_the_misc_metrics_its_table_gives() -> None:
    """One run's YAML report and metrics table: the same metrics, named alike, with the same units and directions,
    the descriptions with punctuation inside a word too, which stress-ng's YAML keys drop (`Mfp-ops`, `SHA-1`,
    `recv'd`: 21 names differed, `fp_mfpops_...` against the table's `fp_mfp_ops_...`)."""
    yaml = {m.name: m for m in parse("stress-ng-0.17-seq24-stm32mp135.yaml").metrics}
    table = {m.name: m for m in parse("stress-ng-0.17-seq24-stm32mp135-table.log").metrics}
    assert yaml["matrix_add_matrix_ops_per_sec"].value == pytest.approx(3476.091296)
    assert (yaml["matrix_add_matrix_ops_per_sec"].unit, yaml["matrix_add_matrix_ops_per_sec"].higher_is_better) \
        == ("add matrix ops/s", True)
    assert yaml.keys() == table.keys() and len(yaml) == 245
    assert all(yaml[n].value == pytest.approx(table[n].value, abs=0.006) for n in table)
    assert all((yaml[n].unit, yaml[n].higher_is_better) == (table[n].unit, table[n].higher_is_better) for n in table)
    assert {"crypt_sha_1_encrypts_per_sec", "fp_mfp_ops_per_sec_float64_add", "rawudp_mb_recv_d_per_sec"} <= yaml.keys()


def test_stress_ng_misc_metric_printed_nan_is_left_out_not_fatal() -> None:
    yaml = (CORPUS / "stress-ng-0.17-seq24-stm32mp135.yaml").read_text(encoding="utf-8")
    nan = yaml.replace("add-matrix-ops-per-sec: 3476.091296", "add-matrix-ops-per-sec: nan")
    table = (CORPUS / "stress-ng-0.17-seq24-stm32mp135-table.log").read_text(encoding="utf-8")
    inf = table.replace("3476.09 add matrix ops per sec", "inf add matrix ops per sec")
    assert nan != yaml and inf != table
    for text in (nan, inf):
        values = parse_text(text).values()
        assert "matrix_add_matrix_ops_per_sec" not in values
        assert values["matrix_copy_matrix_ops_per_sec"] == pytest.approx(15180.29, abs=0.006)


@pytest.mark.parametrize("name, rate", [("sysbench-1.0.20-macos-bogus-rate.log", "22,878,757.01"),
                                        ("sysbench-1.0.20-homebrew-bogus-rate.log", "88,322,749.21")])
def test_sysbench_cpu_rate_no_cpu_reaches_is_refused(name: str, rate: str) -> None:
    for tool in (None, "sysbench-cpu"):
        with pytest.raises(ParseFailure) as failure:
            parse(name, tool)
        assert failure.value.reason == "implausible"
        assert rate in failure.value.detail and "8 thread(s)" in failure.value.detail


@pytest.mark.parametrize("rate, threads, limit, refused", [
    ("46400.00", 8, 10000, False),     # 5,800 a thread: the fastest real runs
    ("1000000.00", 8, 10000, False),   # 125,000 a thread: far past any CPU, yet under the bound
    ("1700000.00", 8, 10000, True),    # 212,500 a thread: over it
    ("1700000.00", 16, 10000, False),  # the same rate over twice the threads
    ("6000.00", 1, 100000, False),     # a 10x larger limit: the work grows 31.6x, 189,737 normalized
    ("6500.00", 1, 100000, True),      # 205,548 normalized
    ("9000000.00", 1, 100, False),     # a tiny limit (under 1,000) is not judged
])
def test_sysbench_cpu_plausibility_bound(rate: str, threads: int, limit: int, refused: bool) -> None:
    text = (CORPUS / "sysbench-1.0.20-macos-bogus-rate.log").read_text(encoding="utf-8")
    text = text.replace("22878757.01", rate).replace("Number of threads: 8", f"Number of threads: {threads}")
    text = text.replace("Prime numbers limit: 10000", f"Prime numbers limit: {limit}")
    text = text.replace("228821179", str(round(float(rate) * 10.0001)))  # events that agree with the rate
    if refused:
        with pytest.raises(ParseFailure, match="implausible"):
            parse_text(text, "sysbench-cpu")
    else:
        assert parse_text(text, "sysbench-cpu").values()["events_per_second"] == float(rate)


@pytest.mark.parametrize("tool", [None, "sysbench-cpu"])
def test_sysbench_1_0_7_without_cpu_speed_derives_the_rate(tool: str | None) -> None:
    parsed = parse("sysbench-1.0.7-no-cpu-speed.log", tool)
    assert parsed.values()["events_per_second"] == 908.25  # 9083 events / 10.0005 s
    assert parsed.flags[0].startswith("DERIVED: ")


def test_sysbench_memory_that_did_no_work_is_refused_not_zero() -> None:
    for tool in (None, "sysbench-memory"):
        with pytest.raises(ParseFailure) as failure:
            parse("sysbench-1.0.20-memory-zero-operations.log", tool)
        assert failure.value.reason == "fatal"
        assert "did no work: 0 events in 0.0008s" in failure.value.detail and "2097152KiB" in failure.value.detail


@pytest.mark.parametrize("name, metric, value", [
    ("stress-ng-memrate-mb-sec-misc.log", "read128_mb_sec", 1754.68),              # `read128 MB/sec`
    ("stress-ng-0.17-riscv-hdd-mb-sec-misc.log", "hdd_mb_sec_write_rate", 163.56),  # `MB/sec write rate`
    ("stress-ng-0.15-stream-geometic-mean.log", "memory_read_rate_mb_per_sec", 2317.88),  # `(MB per sec)`
    ("stress-ng-sockpair-calls-sec-1-min.log", "socketpair_calls_sec", 28156.62),  # `calls sec`, no "per"
])
def test_stress_ng_misc_rates_in_any_wording_are_higher_is_better(name: str, metric: str, value: float) -> None:
    found = {m.name: m for m in parse(name, "stress-ng").metrics}
    assert found[metric].value == value and found[metric].higher_is_better
    assert found[metric].unit in ("MB/s", "socketpair calls/s")


def test_stress_ng_setting_to_a_1_min_run_echoes_60_s() -> None:
    assert parse("stress-ng-sockpair-calls-sec-1-min.log").echoed["timeout"] == 60


def test_stress_ng_instances_unaccounted_for_are_flagged() -> None:
    parsed = parse("stress-ng-ioport-355-of-512-passed.log")
    assert parsed.echoed["threads"] == 512
    assert [f for f in parsed.flags if f.startswith("PARTIAL: stress-ng dispatched 512 stressor instance(s) but "
                                                    "reports 355 passed, 0 failed and 0 skipped")]


def test_sockperf_padded_average_of_old_versions_is_read() -> None:
    values = parse("sockperf-3.1-avg-lat-padded.log").values()
    assert (values["latency_avg_us"], values["latency_stddev_us"], values["latency_p50_us"]) == (6.839, 2.349, 6.802)


def test_iperf3_udp_before_3_11_gives_the_sender_rate_and_the_receiver_loss() -> None:
    parsed = parse("iperf3-3.9-udp-sum-only.json")
    assert parsed.values()["jitter_ms"] == pytest.approx(0.0332, abs=5e-5) and parsed.values()["lost_percent"] == 0
    assert "throughput_mbps" not in parsed.values() and parsed.flags[0].startswith("SENDER_ONLY: ")


@pytest.mark.parametrize("name", ["iperf3-text-summary-only.log", "iperf3-text-server.log"])
def test_iperf3_text_reports_of_3_7_and_later_are_named(name: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse(name)  # recognized as iperf3 without --tool
    assert "iperf3's text report" in failure.value.detail and "-J" in failure.value.detail


def test_iperf3_json_stream_is_named() -> None:
    for tool in (None, "iperf3"):
        with pytest.raises(ParseFailure) as failure:
            parse("iperf3-3.21-json-stream.jsonl", tool)
        assert "--json-stream" in failure.value.detail and "-J" in failure.value.detail


def test_iperf3_bidir_before_3_11_reads_the_first_pair_as_client_to_server() -> None:
    parsed = parse("iperf3-3.9-tcp-bidir.json")
    values = parsed.values()
    assert values["throughput_mbps"] == pytest.approx(293.66412001449263)  # not the reverse 300.338
    assert values["reverse_throughput_mbps"] == pytest.approx(300.33830456027657)
    assert values["retransmits"] == 0 and parsed.echoed["bidir"] == 1 and parsed.flags[0].startswith("BIDIR: ")


@pytest.mark.parametrize("name, tool, figure, value", [
    ("fio-3.33-randtrim.json", "fio", "trim_iops", 2730666.666667),
    ("fio-3.33-unified-mixed.json", "fio", "mixed_iops", 5461333.333333),
    ("fio-2.19-unified-mixed-text.log", "fio", "mixed_iops", 151247e3 / 124267),  # `IOPS=1217`
])
def test_fio_trim_and_unified_reports_are_read(name: str, tool: str, figure: str, value: float) -> None:
    for which in (None, tool):
        assert parse(name, which).values()[figure] == pytest.approx(value)


def test_fio_percentiles_of_a_latency_not_measured_are_left_out() -> None:
    values = parse("fio-2.19-zero-percentiles-text.log", "fio").values()
    assert values["write_iops"] == pytest.approx(468859e3 / 72506) and not [name for name in values if "clat" in name]


@pytest.mark.parametrize("name", ["fio-3.39-interrupted-text.log", "fio-3.33-interrupted.json"])
def test_fio_interrupted_runs_are_flagged(name: str) -> None:
    flags = parse(name, "fio").flags
    assert [f for f in flags if f.startswith("INTERRUPTED: fio: terminating on signal 2")]


@pytest.mark.parametrize("name, words", [
    ("fio-3.38-windows-err42-text.log", "err=42/file:io_u.c:2290"),
    ("fio-3.19-max-jobs-text.log", "maximum number of jobs (8) reached"),
])
def test_fio_text_failures_quote_fio(name: str, words: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse(name)
    assert failure.value.reason == "fatal" and words in failure.value.detail


@pytest.mark.parametrize("name", ["fio-3.8-verify-text.log", "fio-3.33-write-verify.json"])
def test_fio_verify_reads_of_a_write_job_are_left_out(name: str) -> None:
    parsed = parse(name, "fio")
    assert "write_iops" in parsed.values() and not [n for n in parsed.values() if n.startswith("read_")]
    assert [f for f in parsed.flags if f.startswith("VERIFY: ")]


def test_fio_decimal_units_of_kb_base_1000() -> None:
    assert parse("fio-3.33-kb-base-1000-text.log").values()["read_bw"] == pytest.approx(22.4e9 / 1024)


def test_hdparm_eof_beside_a_kernel_sense_error_quotes_it() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("hdparm-eof-sg-io.log", "hdparm")
    assert failure.value.reason == "fatal" and "SG_IO: bad/missing sense data" in failure.value.detail
    assert "empty or unattached" not in failure.value.detail


@pytest.mark.parametrize("prefix", ["2024-05-01T12:00:00.123456789Z ", "sysbench-1  | ", "[pod/sb-x/sysbench] "])
def test_a_log_collectors_prefix_on_every_line_is_dropped(prefix: str) -> None:
    """`kubectl logs --timestamps`, docker compose, `kubectl logs --prefix`."""
    text = (CORPUS / "sysbench-1.1-cpu-ec2.log").read_text(encoding="utf-8")
    prefixed = "\n".join(prefix + line for line in text.split("\n"))
    assert parse_text(prefixed, "sysbench-cpu").values() == parse_text(text, "sysbench-cpu").values()
    report = (CORPUS / "fio-3.40-clat-above-lat.json").read_text(encoding="utf-8")
    assert parse_text("\n".join(prefix + line for line in report.split("\n"))).values() == parse_text(report).values()


def test_fio_json_with_sorted_keys_is_read() -> None:
    """`jq -S .` puts disk_util before "fio version": the report's brace is not the one before that key."""
    report = (CORPUS / "fio-3.16-three-groups-numjobs.json").read_text(encoding="utf-8")
    doc = json.loads(report)
    assert doc.get("disk_util") and sorted(doc)[0] < "fio version"
    assert parse_text(json.dumps(doc, sort_keys=True, indent=2)).values() == parse_text(report).values()


@pytest.mark.parametrize("name", ["fio-2.2.10-write-only-no-options.json", "fio-3.33-randrw-rwmixread-0.json"])
def test_fio_primary_is_the_direction_that_ran_when_rw_does_not_say(name: str) -> None:
    values = parse(name, "fio").values()  # was: no read_iops figure
    assert values["write_iops"] > 0 and "read_iops" not in values


@pytest.mark.parametrize("name, words", [("fio-macos-libaio-not-loadable.log", "engine libaio not loadable"),
                                         ("fio-windows-job-dropped.log", "job global dropped")])
def test_fio_that_never_ran_a_job_quotes_fio(name: str, words: str) -> None:
    for tool in (None, "fio"):
        with pytest.raises(ParseFailure) as failure:
            parse(name, tool)
        assert failure.value.reason == "fatal" and words in failure.value.detail


@pytest.mark.parametrize("name, words", [("sysbench-wrapper-summary.log", "a wrapper's summary or help text"),
                                         ("sysbench-1.1-memory-help.log", "sysbench's help text")])
def test_sysbench_output_that_holds_no_run_says_so(name: str, words: str) -> None:
    for tool in (None, "sysbench-memory"):
        with pytest.raises(ParseFailure) as failure:
            parse(name, tool)
        assert words in failure.value.detail


def test_stress_ng_totals_over_instances_are_work_done() -> None:
    found = {m.name: m for m in parse("stress-ng-0.18-seq24-total-of-instances.log").metrics}
    received = found["rawpkt_packets_received"]  # not `..._total_of_2_instances`, lower is better
    assert (received.value, received.unit, received.higher_is_better) == (10642199.0, "packets received", True)


def test_hdparm_busybox_rates_in_kb_s() -> None:
    values = parse("hdparm-busybox-kb-s.log", "hdparm").values()  # was: "the run was cut short"
    assert values["cached_read_mb_per_second"] == pytest.approx(1052111 / 1024)
    assert values["read_mb_per_second"] == pytest.approx(122132 / 1024)


@pytest.mark.parametrize("name, figure, value", [("hdparm-mail-quoted.log", "read_mb_per_second", 46.4),
                                                 ("fio-2.2.10-mail-quoted-text.log", "write_iops", 101 / 20.001)])
def test_logs_quoted_in_a_mail_are_read(name: str, figure: str, value: float) -> None:
    assert parse(name).values()[figure] == pytest.approx(value)  # fio: `iops=5`, cut from 101 I/Os in 20001 ms


def test_hdparm_line_in_a_form_not_read_says_so() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("hdparm-quoted-printable.log", "hdparm")  # was: "the run was cut short"
    assert "in a form podtax does not read" in failure.value.detail and "=3D 43.62" in failure.value.detail


def test_fio_error_before_a_cut_json_report_is_the_cause() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("fio-3.36-eio-json-cut.log")
    assert failure.value.reason == "fatal" and failure.value.detail.count("err=5/file:io_u.c:1896") == 1


def test_stress_ng_rate_without_cpu_time_is_left_out() -> None:
    values = parse("stress-ng-clone-no-cpu-time.log").values()
    assert values["bogo_ops_per_second_real"] == 1698.98 and "bogo_ops_per_second_usr_sys" not in values


def test_iperf3_json_recognized_however_version_is_spaced() -> None:
    parsed = parse("iperf3-3.1.6-spaced-version.json")  # was: no output recognized (without --tool)
    assert parsed.values()["throughput_mbps"] == pytest.approx(88.565, abs=5e-4)


def test_iperf3_sctp_is_echoed_as_sctp() -> None:
    assert parse("iperf3-3.21-sctp.json").echoed["protocol"] == "sctp"


def test_iperf3_udp_before_3_11_under_its_template_is_an_old_version() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("iperf3-3.9-udp-sum-only.json", "iperf3")
    assert failure.value.reason == "unsupported-version"


@pytest.mark.parametrize("name, words", [
    ("sockperf-3.10-ping-pong-then-throughput.log", "ping-pong report and a throughput (tp) report"),
    ("sockperf-3.10-server.log", "a sockperf server's log"),
])
def test_sockperf_logs_without_one_client_report_are_named(name: str, words: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse(name)
    assert words in failure.value.detail


@pytest.mark.parametrize("name, tool, reason, words", [
    ("stress-ng-vm-bit-errors-unsuccessful.log", None, "fatal", "bit errors"),  # was: truncated (killed?)
    ("stress-ng-illegal-time-specifier.log", "stress-ng", "bad-argument", "Illegal time specifier"),
    ("sockperf-one-observation.log", None, "fatal", "only 1 message(s) in 0.000 s"),
    ("stress-ng-0.19-build-log-timestamp-hash-error.log", None, "fatal", "hash error in bogo-ops counter"),
    ("stress-ng-0.13-script-log-seven-runs.log", "stress-ng-cpu", "unknown-format", "several stress-ng runs"),
    ("hdparm-seven-disks-loop.log", None, "unknown-format", "timings of 7 devices (/dev/sda, /dev/sdb"),
    ("fio-3.33-status-interval-text.log", None, "unknown-format", "reports several times (--status-interval)"),
    ("sysbench-1.1-oltp-riscv.log", None, "unknown-format", "this is an oltp run"),
    ("sysbench-1.1-oltp-riscv.log", "sysbench-cpu", "wrong-tool", "found an oltp run"),  # not `fileio`
    ("sysbench-1.0.15-threads.log", "sysbench-cpu", "wrong-tool", "threads, mutex or a script"),
    ("sysbench-1.0.15-fileio-prepare.log", None, "unknown-format", "fileio run (its prepare or cleanup step"),
    ("sysbench-1.0.19-usage-error-then-help.log", None, "bad-argument", "requires a command argument"),
    ("sysbench-1.0.11-usage-error-then-mutex.log", None, "unknown-format", "threads, mutex or a script"),
])
def test_refused_with_a_reason_that_names_what_happened(name: str, tool: str | None, reason: str, words: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse(name, tool)
    assert failure.value.reason == reason and words in failure.value.detail


def test_fio_text_cut_before_its_later_jobs_is_truncated_not_a_short_sum() -> None:
    text = (CORPUS / "fio-3.39-interrupted-text.log").read_text(encoding="utf-8")
    second = text.index("(groupid=", text.index("(groupid=") + 1)
    cut = text[:text.rfind("\n", 0, second) + 1]  # job 1 of 4 only: write_iops 2526 of 10124
    assert parse_text(text, "fio").values()["write_iops"] == pytest.approx(10124, abs=2)
    with pytest.raises(ParseFailure) as failure:
        parse_text(cut, "fio")
    assert failure.value.reason == "truncated" and "started 4 job process(es) but only 1" in failure.value.detail


@pytest.mark.parametrize("threads", ["1e308", "2.5", "4194305", "8x"])
def test_a_thread_count_sysbench_never_prints_is_refused(threads: str) -> None:
    """`Number of threads: 1e308` was read as 10^308 threads: 22.9 M events/s over them passed the plausibility bound
    a thread (hT's audit); `2.5` read as 2."""
    text = (CORPUS / "sysbench-1.0.20-macos-bogus-rate.log").read_text(encoding="utf-8")
    text = text.replace("Number of threads: 8", f"Number of threads: {threads}")
    for tool in (None, "sysbench-cpu"):
        with pytest.raises(ParseFailure, match="no thread count sysbench prints") as err:
            parse_text(text, tool)
        assert err.value.reason == "unknown-format"
