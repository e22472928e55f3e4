"""Hostile shapes of input, at up to the largest log the parser service takes (safefiles.MAX_LOG_BYTES, what a raw
log on the bus and `podtax parse` carry): each gives a Parsed or a ParseFailure with a reason, never another
exception, and none is read in more than linear time. The times are measured in bench/bench_hostile_parsers.py; here
only the outcome is asserted (before the fixes, the first tests raised RecursionError or OverflowError, and the
megabyte ones did not end: a line of banners took 0.3 s at 10 KiB, a fio job line 30 s at 8 KiB, both cubic)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from podtax.cli.main import main
from podtax.parsers import Parsed, ParseFailure, parse_run, parse_text
from podtax.safefiles import MAX_LOG_BYTES

from tests.parsers.corpus_index import CORPUS, read_text

SYSBENCH = read_text(CORPUS / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log")
HEADER = {"kind": "header", "template": "volume-churn", "backend": "kubernetes", "format": 1}
TIMES = {"request_sent": 0.0, "api_accepted": 0.01, "pv_created": 0.1, "bound": 0.2, "delete_requested": 1.0,
         "gone": 1.05, "pv_gone": 1.1}
IPERF3 = {"start": {"version": "iperf 3.12", "connected": [{}], "test_start": {"protocol": "TCP", "num_streams": 1,
                                                                                "duration": 2}},
          "end": {"sum_sent": {"bytes": 10, "bits_per_second": 80.0, "retransmits": 0},
                  "sum_received": {"bytes": 10, "bits_per_second": 80.0}}}
SOCKPERF_NO_VALID = "sockperf: == version #3.7-no.git == \nsockperf: No valid observations found\n"
HUGE = 10**400  # an integer json reads (fewer than 4,300 digits) that no float holds


def fill(unit: str, size: int = MAX_LOG_BYTES) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def failure_of(run) -> ParseFailure:  # noqa: ANN001 - a callable
    with pytest.raises(ParseFailure) as info:
        run()
    return info.value


def timeline(times: dict[str, object] | None = None, **summary: object) -> str:
    obj = {"kind": "object", "name": "v1", "t": times or TIMES, "error": None}
    end = {"kind": "summary", "requests": {"create": 1}, "errors": 0, "wall_s": 2.0, **summary}
    return "\n".join(json.dumps(r) for r in (HEADER, obj, end)) + "\n"


@pytest.mark.parametrize("nested", ["[" * 100_000, '{"a":' * 20_000])
def test_a_timeline_line_nested_deeper_than_json_reads_is_refused(nested: str) -> None:
    text = json.dumps(HEADER) + '\n{"kind": "object", "name": "a", "t": ' + nested + "\n"
    for run in (lambda: parse_text(text, "volume-churn"), lambda: parse_text(text, None),
                lambda: parse_run("volume-churn", text)):
        failure = failure_of(run)
        assert failure.reason == "unknown-format" and "line 2 is not valid JSON" in failure.detail


@pytest.mark.parametrize(("text", "where"), [
    (timeline({**TIMES, "api_accepted": HUGE}), "t.api_accepted"),
    (timeline(requests={"create": HUGE}), "requests.create"),
    (timeline(wall_s=HUGE), "wall_s"),
    (timeline(errors=HUGE), "errors"),
])
def test_a_timeline_integer_beyond_any_float_is_refused(text: str, where: str) -> None:
    failure = failure_of(lambda: parse_run("volume-churn", text))
    assert failure.reason == "unknown-format" and "not a finite number" in failure.detail
    assert where in failure.detail


def test_an_iperf3_figure_beyond_any_float_is_refused() -> None:
    doc = json.loads(json.dumps(IPERF3))
    doc["end"]["sum_received"]["bits_per_second"] = HUGE
    failure = failure_of(lambda: parse_run("iperf3", json.dumps(doc), requested={"parallel": 1}))
    assert failure.reason == "unknown-format" and "sum_received.bits_per_second" in failure.detail


def test_an_echoed_integer_beyond_any_float_is_compared_as_text() -> None:
    doc = json.loads(json.dumps(IPERF3))
    doc["start"]["test_start"]["num_streams"] = HUGE
    parsed = parse_run("iperf3", json.dumps(doc), requested={"parallel": 1})
    assert parsed.metric("throughput_mbps").value == 80e-6
    assert any(f.startswith("PARAM_MISMATCH: parallel echoed as 1000") for f in parsed.flags)


@pytest.mark.parametrize("limit", ["1e300", "9" * 300])
def test_a_sysbench_prime_limit_beyond_sysbench_is_refused(limit: str) -> None:
    text = SYSBENCH.replace("Prime numbers limit: 100000", f"Prime numbers limit: {limit}")
    failure = failure_of(lambda: parse_text(text, "sysbench-cpu"))
    assert failure.reason == "unknown-format" and "beyond what sysbench takes" in failure.detail


@pytest.mark.parametrize("tool", ["stress-ng", None])
def test_a_line_of_many_stress_ng_prefixes_is_refused(tool: str | None) -> None:
    """Read from each `stress-ng: ` in turn, by recursion: RecursionError from ~1,000 of them."""
    failure = failure_of(lambda: parse_text(fill("stress-ng: "), tool))
    assert failure.reason == "unknown-format"


def test_a_stress_ng_line_behind_prefixes_is_still_read() -> None:
    text = read_text(CORPUS / "debian12-x86_64" / "stress-ng-cpu-1-times.log")
    prefixed = "\n".join(f"$ x: stress-ng: stress-ng: {line}" if line.startswith("stress-ng:") else line
                         for line in text.split("\n"))
    assert parse_text(prefixed, "stress-ng").values() == parse_text(text, "stress-ng").values()


@pytest.mark.parametrize(("text", "tool", "reason"), [
    # detect's hdparm device line: `^\s*` crossed blank lines, each line's scan redone from every earlier one
    ("/dev/x y\n" * 17 + "\n" * MAX_LOG_BYTES, None, "unknown-format"),
    ("/dev/x y\n" * 17 + "/dev/x:" + " " * MAX_LOG_BYTES + "y", None, "unknown-format"),
    ("/dev/x y\n" * 17 + "\n" * MAX_LOG_BYTES, "fio", "unknown-format"),  # wrong-tool's check goes through detect
    # sysbench: a banner behind other text, looked for with a backtracking regex; runs sorted by `in` on a list
    (fill("a\tsysbench 1.0 (x"), "sysbench", "unknown-format"),
    (fill("sysbench 1.0.20 (x)\nInvalid value for x\nsysbench 1.0.20 (x)\nThreads started!\n"), "sysbench",
     "unknown-format"),
    # fio text: a job's head line whose block size splits in many ways (`bs=a-a-a-...`): cubic, 30 s at 8 KiB
    ("fio-3.33\n" + fill("j: (g=0): rw=read, bs=" + "a-" * 50_000), "fio", "truncated"),
    # fio text: a head line of many heads (names may hold `: `): each `: (g=` tried, its bs scanned to the line's end
    ("fio-3.33\n" + fill("j: (g=0): rw=read, bs="), None, "truncated"),
    # stress-ng: a line of skip marks, each read to the line's start and end (quadratic); its first word taken for
    # the stressor skipped (`skipped its skipping stressor`): no message of a skip names none
    ("stress-ng: info:  [1] dispatching hogs: 1 cpu\n" + fill("skipping stressor "), "stress-ng", "truncated"),
    ("stress-ng: info:  [1] dispatching hogs: 1 cpu\n" + fill("skipping stressor "), None, "truncated"),
    # sockperf: a `[Total Run]` line's count looked for with `[^\n]*ReceivedMessages=` from each of many
    (SOCKPERF_NO_VALID + fill("[Total Run] RunTime=1 sec;"), None, "fatal"),
    (SOCKPERF_NO_VALID + fill("[Total Run] RunTime=1 sec;"), "sockperf", "fatal"),
])
def test_megabyte_shapes_that_were_read_in_quadratic_time_end_with_a_reason(text: str, tool: str | None,
                                                                              reason: str) -> None:
    assert failure_of(lambda: parse_text(text, tool)).reason == reason


def test_a_sockperf_count_of_more_digits_than_int_reads_is_refused() -> None:
    """`ReceivedMessages=` and 5,000 digits was read by int(): ValueError (over 4,300 digits), not a ParseFailure."""
    text = SOCKPERF_NO_VALID + "[Total Run] RunTime=1.0 sec; SentMessages=5; ReceivedMessages=" + "9" * 5000 + "\n"
    for run in (lambda: parse_text(text, None), lambda: parse_text(text, "sockperf"),
                lambda: parse_run("sockperf", text)):
        assert failure_of(run).reason == "fatal"


def test_a_megabyte_of_fio_status_groups_without_blank_lines_reads_as_the_log() -> None:
    """Each `Run status group` block was read to the next blank line (none here: the text's end) and its jobs summed
    per group line: quadratic, 5 s for 100 KiB of distinct groups, 493 s for a megabyte. Group 0's block (the jobs')
    now ends at the next group's line, whose rate is not its own: the log reads as without the other groups."""
    log = read_text(CORPUS / "debian12-x86_64" / "fio-randread-4k-numjobs2-normal.txt")
    unit = "Run status group {0} (all jobs):\n   READ: bw=1MiB/s (1MB/s), io=1KiB (1kB), run=1-1msec\n"
    groups = "".join(unit.format(k) for k in range(1, MAX_LOG_BYTES // len(unit)))
    parsed = parse_text(log[:log.index("\n\nDisk stats")] + "\n" + groups + "\n", "fio")
    alone = parse_text(log, "fio")
    assert parsed.values() == alone.values() and parsed.flags == alone.flags
    assert not any(f.startswith("STAGGERED") for f in parsed.flags)


def test_a_megabyte_of_fio_jobs_of_one_name_names_each_by_its_number() -> None:
    """Each job's name was counted among all the jobs' names (quadratic in jobs; now counted once)."""
    unit = "n: (groupid=0, jobs=1): err= 0: pid={0}: x\n  read: IOPS=1, BW=1KiB/s (1kB/s)(1KiB/1msec)\n"
    jobs = MAX_LOG_BYTES // len(unit)
    values = parse_text("fio-3.33\n" + "".join(unit.format(k) for k in range(jobs)) + "\n", "fio").values()
    assert values["n_0_read_iops"] == values[f"n_{jobs - 1}_read_iops"] == 1 and values["read_iops"] == jobs


def test_a_sysbench_banner_behind_other_text_is_named_as_before() -> None:
    text = "CPU 0 sysbench 1.0.11 (using system LuaJIT 2.1.0-beta3)\nx (LuaJIT)\n"
    failure = failure_of(lambda: parse_text(text, "sysbench"))
    assert "(`CPU 0 sysbench 1.0.11 (using`)" in failure.detail


def test_every_outcome_is_a_parsed_or_a_parse_failure() -> None:
    """The shapes above through every parser, named and detected: nothing but Parsed or ParseFailure."""
    shapes = ["[" * 50_000, "9" * 50_000, "\0a\0\n" * 10_000, "\udcff" * 1000, fill("stress-ng: ", 50_000),
              timeline({**TIMES, "bound": HUGE})]
    for text in shapes:
        for tool in ("sysbench", "stress-ng", "hdparm", "fio", "iperf3", "sockperf", "timeline", None):
            try:
                assert isinstance(parse_text(text, tool), Parsed)
            except ParseFailure as failure:
                assert failure.reason


def test_podtax_parse_says_one_line_per_hostile_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the real command: garbage bytes, a timeline nested past json's depth (a RecursionError's traceback
    before) and one with an integer no float holds (OverflowError) each give one FAILED line with its reason, and
    exit status 1."""
    files = {"garbage.bin": bytes(range(256)) * 400 + b"\xff\xfe\x00",
             "deep.jsonl": (json.dumps(HEADER) + '\n{"kind": "object", "t": ' + "[" * 100_000 + "\n").encode(),
             "huge.jsonl": timeline({**TIMES, "bound": HUGE}).encode()}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        assert main(["parse", str(tmp_path / name)]) == 1
        out = capsys.readouterr()
        [said] = out.out.splitlines()
        assert said.startswith(f"FAILED {tmp_path / name}: unknown-format — "), said
        assert out.err == "1 of 1 file(s) failed to parse\n"


def test_a_recorded_version_of_a_megabyte_of_digits_is_read_in_linear_time() -> None:
    """The run's recorded version (the agent's `--version` output, a manifest's tool_version, a log's provenance line)
    was searched from each digit of a run of them (1.7 s for 30,000 digits, quadratic): it names no version."""
    parsed = parse_run("sysbench-cpu", SYSBENCH, recorded_version="1" * MAX_LOG_BYTES)
    assert parsed.tool_version == "1.0.20" and parsed.tool_build
    assert not any(f.startswith("VERSION_MISMATCH") for f in parsed.flags)
    mismatch = parse_run("sysbench-cpu", SYSBENCH, recorded_version="9" * 50_000 + " sysbench 1.0.18 (x)")
    assert any(f.endswith("the run recorded 1.0.18") for f in mismatch.flags)


def laughs(levels: int = 9) -> str:
    """A billion-laughs document: each alias level nine times the one below (a YAML loader would build 9**9)."""
    out = ['lol0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    out += [f"lol{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return "\n".join(out) + "\n"


def test_yaml_aliases_in_a_stress_ng_report_are_text() -> None:
    """The --yaml reader finds its keys with str.find and loads no YAML, so aliases are never expanded: a report with
    a billion-laughs block among its sections reads as without it, and one that starts with the block is no report."""
    report = read_text(CORPUS / "debian12-x86_64" / "stress-ng-cpu-2-matrixprod.yaml")
    inside = report.replace("system-info:", laughs() + "system-info:", 1)
    assert parse_text(inside, None).values() == parse_text(report, None).values()
    assert parse_text(inside, None).metric("bogo_ops").value == 4647
    assert failure_of(lambda: parse_run("stress-ng-cpu", laughs() + report)).reason == "unknown-format"
