"""sockperf 3.7 captures of this project's Debian 12 VM (sweep hB), client and `sockperf server` on 127.0.0.1.

`ping-pong --no-rdtsc` received 143,990 replies in its 1 s run, yet sockperf printed "No valid observations found"
(exit 0): the refusal said "too few messages for the duration (raise rate or duration)", advice that cannot help.
It now names the replies received and the clock. The other captures are forms not yet in the corpus: each figure
read equals the one the log prints."""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, parse_text

from tests.parsers.test_found_captures import parse


def test_no_valid_observations_with_plenty_of_replies_points_at_the_clock_not_the_load() -> None:
    with pytest.raises(ParseFailure) as failure:
        parse("sockperf-3.7-no-rdtsc-no-valid-observations.log")
    assert failure.value.reason == "fatal"
    assert "received 143990 replies in 1.000 s" in failure.value.detail
    assert "--no-rdtsc" in failure.value.detail and "raise rate" not in failure.value.detail


def test_plenty_of_replies_none_timed_does_not_assert_the_clock() -> None:
    """100 replies or more and none timed: with `--no-rdtsc` the clock is the usual cause, not a proven one."""
    text = ("sockperf: [Total Run] RunTime=1.000 sec; Warm up time=400 msec; SentMessages=10005; "
            "ReceivedMessages=100\nsockperf: No valid observations found\n")
    with pytest.raises(ParseFailure) as failure:
        parse_text(text, "sockperf")
    assert "none was timed inside its measured window" in failure.value.detail
    assert "the usual cause is its clock" in failure.value.detail and "is at fault" not in failure.value.detail


def test_no_valid_observations_after_few_messages_still_asks_for_more() -> None:
    text = ("sockperf: [Total Run] RunTime=1.000 sec; Warm up time=400 msec; SentMessages=3; ReceivedMessages=3\n"
            "sockperf: ========= Printing statistics for Server No: 0\n"
            "sockperf: No valid observations found. Try tune parameters: --time/--mps/--reply-every\n")
    with pytest.raises(ParseFailure) as failure:
        parse_text(text, "sockperf")
    assert "too few messages for the duration (raise rate or duration)" in failure.value.detail


def test_activity_interval_lines_are_not_read_as_figures() -> None:
    """`-A 20000` prints `-- Interval --  -- Message Rate --` rows during the run: the report after them counts."""
    parsed = parse("sockperf-3.7-activity-intervals.log")
    values = parsed.values()
    assert {k: values[k] for k in ("latency_avg_us", "latency_stddev_us", "latency_p50_us", "latency_p99_99_us",
                                   "latency_max_us", "latency_min_us", "dropped_messages")} == {
        "latency_avg_us": 15.557, "latency_stddev_us": 27.259, "latency_p50_us": 2.311, "latency_p99_99_us": 669.531,
        "latency_max_us": 1919.448, "latency_min_us": 1.776, "dropped_messages": 0}
    assert values["messages_per_second"] == pytest.approx(17660 / 0.550)  # [Valid Duration] replies per second
    assert "latency_p99_999_us" not in values  # 17,660 observations: sockperf printed its max there


def test_under_load_tcp_replying_to_every_message_with_full_rtt() -> None:
    """`under-load --tcp --mps 2000 --reply-every 1 --full-rtt`: round trips, every message answered (no
    REPLY_EVERY flag); its own `interrupted by signal 2` line comes after `interrupted by timer`."""
    parsed = parse("sockperf-3.7-ul-tcp-reply-every-1-full-rtt.log")
    values = parsed.values()
    assert {k: values[k] for k in ("rtt_avg_us", "rtt_stddev_us", "rtt_p25_us", "rtt_p50_us", "rtt_p99_us",
                                   "rtt_p99_9_us", "rtt_max_us", "rtt_min_us")} == {
        "rtt_avg_us": 157.37, "rtt_stddev_us": 651.863, "rtt_p25_us": 34.368, "rtt_p50_us": 41.895,
        "rtt_p99_us": 3154.549, "rtt_p99_9_us": 7653.673, "rtt_max_us": 8153.009, "rtt_min_us": 10.318}
    assert values["messages_per_second"] == pytest.approx(1099 / 0.549)
    assert parsed.echoed == {"protocol": "tcp", "duration": 1}  # `[Total Run] RunTime=1.000 sec`
    assert not any(f.startswith(("REPLY_EVERY", "INTERRUPTED")) for f in parsed.flags), parsed.flags
