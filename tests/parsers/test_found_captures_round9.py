"""The parsers on the ninth round of real captures (tests/corpus-found/, sources in its README): what
each must give, figures checked against the log by hand. Each case failed (a wrong or unflagged figure,
or a refusal naming the wrong cause) before the change it tests.
"""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, parse_text

from tests.parsers.test_found_captures import CORPUS, parse


def flag(parsed, name: str) -> str:  # noqa: ANN001 - a Parsed
    return next((f for f in parsed.flags if f.startswith(name + ":")), "")


def test_stress_ng_instances_that_finished_prematurely_are_flagged() -> None:
    parsed = parse("stress-ng-0.17-bigheap-finished-prematurely.log", "stress-ng")
    assert parsed.values()["bogo_ops"] == 344 and parsed.values()["real_time"] == 3.78
    assert "10 stress-ng instance(s) stopped before the run's end" in flag(parsed, "PREMATURE")
    assert "after just 2.46 secs" in flag(parsed, "PREMATURE")


def test_sockperf_under_load_counts_replies_and_says_so() -> None:
    parsed = parse("sockperf-under-load-reply-every-100.log", "sockperf")
    values = parsed.values()
    assert values["messages_per_second"] == pytest.approx(453 / 4.520)
    assert values["sent_messages_per_second"] == pytest.approx(45201 / 4.520)
    assert "453 of 45201 messages were answered" in flag(parsed, "REPLY_EVERY")
    assert not flag(parsed, "INTERRUPTED")  # `by signal 2` comes after `interrupted by timer`: it stopped nothing


def test_a_ping_pong_run_answers_every_message_and_is_not_flagged() -> None:
    parsed = parse("sockperf-3.10-extended-stats.log", "sockperf")
    assert not flag(parsed, "REPLY_EVERY") and not flag(parsed, "INTERRUPTED")
    assert parsed.values()["sent_messages_per_second"] == pytest.approx(515358 / 29.550)


def test_hdparm_offset_timing_is_read_and_its_offset_echoed() -> None:
    parsed = parse("hdparm-offset-37gb.log", "hdparm")
    assert parsed.values()["read_mb_per_second"] == 1.54 and parsed.echoed["offset_gb"] == 37


def test_fio_rate_cap_is_flagged() -> None:
    parsed = parse("fio-3.41-rate-iops-job-file-echoed.log", "fio")
    assert "rate_iops=350,150" in flag(parsed, "RATE_LIMITED")


def test_fio_jobs_started_at_different_times_are_flagged() -> None:
    parsed = parse("fio-6-jobs-startdelay-staggered.log", "fio")
    # fio 3.1's `BW=` figures (its old num2str) read as the issued I/Os x 4 KiB over the runtime (29656.8 as printed)
    assert parsed.values()["write_bw"] == pytest.approx(29613.03, abs=0.01)
    assert "gives write bw=27648 KiB/s" in flag(parsed, "STAGGERED")


def test_fio_behind_a_test_frameworks_prefix_is_read() -> None:
    parsed = parse("fio-avocado-prefixed-excerpt.log", "fio")
    assert parsed.values()["read_iops"] == 84 and parsed.values()["read_bw"] == pytest.approx(42.4 * 1024)


def test_a_fio_fallocate_warning_is_no_failure() -> None:
    parsed = parse("fio-fallocate-warning.log", "fio")
    assert not flag(parsed, "ERRORS") and parsed.values()


def test_the_sysbench_memory_transfer_line_in_another_form_is_quoted() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("sysbench-1.0.17-memory-commented-transfer-line.log", "sysbench-memory")
    assert failure.value.reason == "unknown-format"
    assert "`102399.94 MiB transferred (20900.15 MiB/sec)" in failure.value.detail


REFUSED = [  # (capture, tool, reason, words the refusal must say)
    ("sysbench-1.0.9-three-cpu-runs.log", "sysbench-cpu", "unknown-format", "3 cpu runs; split it, one run per log"),
    ("sysbench-1.0.9-three-cpu-runs.log", "sysbench-memory", "wrong-tool", "found 3 runs (cpu, cpu, cpu)"),
    ("sysbench-1.0.17-bytes-literal-escaped.log", None, "unknown-format", "line breaks are escaped"),
    ("iperf3-text-server-interrupted.log", "iperf3", "unknown-format", "text report of a server"),
    ("iperf3-3.1.3-nested-under-results.json", "iperf3", "unknown-format", "iperf3 report under `Results`"),
    ("iperf3-text-report-then-wrapper-json.log", "iperf3", "unknown-format", "text report (rounded to 3 digits)"),
    ("hdparm-standby-setting-no-timing.log", "hdparm", "unknown-format", "run without -t or -T"),
    ("fio-job-failed-ftruncate-err38.log", "fio", "fatal", "err=38/file:filesetup.c:184, func=ftruncate"),
    ("fio-3.25-client-mode-text.log", "fio", "unknown-format", "fio client/server output"),
    ("fio-3.39-engine-error-no-prefix.log", "fio", "fatal", "io_uring_cmd only works with nvme ns generic char"),
    ("fio-kubestr-summary.log", "fio", "unknown-format", "kubestr's summary of a fio run"),
    ("iperf2-client-text.log", "iperf3", "wrong-tool", "this is iperf 2 output"),
    ("sockperf-tp-summary-only.log", None, "unknown-format", "sockperf throughput (tp) report"),
    # round 10
    ("fio-3.17-wrapped-percentile-rows.log", "fio", "unknown-format", "percentile rows are wrapped"),
    ("stress-ng-two-runs-one-table.log", "stress-ng", "unknown-format", "2 `successful run completed` lines"),
    ("sysbench-1.0.20-fileio-only-four-runs.log", None, "unknown-format", "none of cpu or memory"),
    ("sysbench-1.0.20-fileio-only-four-runs.log", "sysbench-cpu", "wrong-tool", "expected a sysbench cpu report"),
    ("fio-verify-failed-only.log", None, "fatal", "sha256: verify failed at file"),
    ("sysbench-1.1-report-checkpoints.log", "sysbench-cpu", "unknown-format", "--report-checkpoints"),
    ("stress-ng-0.13-no-stress-workers.log", "stress-ng", "bad-argument", "No stress workers invoked"),
    ("sysbench-1.0.11-banner-behind-prefix.log", None, "unknown-format", "banner is behind other text"),
    ("iperf3-3.16-name-not-known.json", "iperf3", "unreachable", "name does not resolve"),
]


@pytest.mark.parametrize(("name", "stressor", "bogo_ops"), [
    ("stress-ng-0.07-four-stressors-no-final-newline.log", "udp", 2779614),
    ("stress-ng-0.07-cpu-no-final-newline.log", "cpu", 1875),
])
def test_a_whole_last_row_without_a_newline_is_read(name: str, stressor: str, bogo_ops: int) -> None:
    """A harness that strips the final newline: the last row is whole (its rates have their 2 decimals)."""
    parsed = parse(name, "stress-ng")
    values = parsed.values()
    assert values.get("bogo_ops", values.get(f"{stressor}_bogo_ops")) == bogo_ops
    assert not flag(parsed, "MISSING")
    cut = (CORPUS / name).read_text(encoding="utf-8")[:-1]  # the same row cut inside its last rate: not read
    if stressor == "cpu":
        with pytest.raises(ParseFailure):
            parse_text(cut, "stress-ng-cpu")
    else:
        shorter = parse_text(cut, "stress-ng")
        assert f"{stressor}_bogo_ops" not in shorter.values() and flag(shorter, "MISSING")


def test_fio_1x_issued_line_is_read() -> None:
    """fio 1.x prints `issued r/w: total=256/0`: a lost `read :` line is seen, as in 2.x and 3.x."""
    text = (CORPUS / "fio-1.x-randread.log").read_text(encoding="utf-8")
    assert parse_text(text, "fio").values()["read_iops"] == pytest.approx(256e3 / 178)  # `iops=1438`
    kept = [x for x in text.split("\n") if not x.lstrip().startswith(("read :", "slat", "clat"))]  # its block lost
    with pytest.raises(ParseFailure) as failure:
        parse_text("\n".join(kept), "fio")
    assert "issued read I/O but has no `read:` line" in failure.value.detail


def test_fio_cut_after_its_percentile_header_is_truncated() -> None:
    text = (CORPUS / "fio-2.1.9-freebsd-zfs-randwrite.log").read_text(encoding="utf-8")
    assert "write_clat_p50" in parse_text(text, "fio").values()
    cut = text[:text.index("clat percentiles")] + "clat percentiles (usec):\n"
    with pytest.raises(ParseFailure) as failure:
        parse_text(cut, "fio")
    assert failure.value.reason == "truncated"


@pytest.mark.parametrize(("name", "tool", "reason", "words"), REFUSED, ids=[f"{c[0]}-{c[1]}" for c in REFUSED])
def test_refusals_name_the_cause(name: str, tool: str | None, reason: str, words: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse(name, tool)
    assert failure.value.reason == reason, failure.value.detail
    assert words in failure.value.detail
