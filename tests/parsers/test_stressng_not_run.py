"""stress-ng runs that started no stressor because a setting could not be applied: real stress-ng 0.15.06 captures
(tests/corpus/debian12-x86_64, commands in COMMANDS.tsv), each exit 1 with no metrics table. They were refused as
cut logs (`truncated`) or as no stress-ng log at all (`unknown-format`), which sends the operator looking for a
lost tail or a wrong file instead of the option to fix."""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, parse_text

from tests.parsers.corpus_index import CORPUS, read_text

DEBIAN = CORPUS / "debian12-x86_64"

CASES = [
    ("stress-ng-sched-fifo-not-root.log", "permission-denied", "cannot set scheduler 'fifo': errno=1"),
    ("stress-ng-sched-prio-200.log", "bad-argument", "scheduler priority level must be set between 1 and 99"),
    ("stress-ng-bind-mount-pathological.log", "bad-argument", "--pathological option"),
    ("stress-ng-sched-unknown.log", "bad-argument", "Invalid sched option: nosuch"),
    ("stress-ng-taskset-cpu-5.log", "bad-argument", "taskset: invalid range, 5 is not allowed"),
    ("stress-ng-ionice-realtime-no-level.log", "bad-argument", "Priority levels range from 0 (max) to 7 (min)"),
    ("stress-ng-ionice-realtime-not-root.log", "permission-denied", "needs CAP_SYS_NICE"),  # was unknown-format
    ("stress-ng-taskset-3-1.log", "bad-argument", "taskset: invalid range in '3-1'"),
]


@pytest.mark.parametrize(("name", "reason", "said"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("tool", ["stress-ng", "stress-ng-cpu"])
def test_a_setting_stress_ng_could_not_apply_is_named(name: str, reason: str, said: str, tool: str) -> None:
    with pytest.raises(ParseFailure) as refused:
        parse_text(read_text(DEBIAN / name), tool)
    assert refused.value.reason == reason
    assert said in refused.value.detail


def test_a_run_that_set_its_scheduler_reads_as_before() -> None:
    """The children set the scheduler quietly; a run whose table is there is read whatever its start said."""
    text = read_text(DEBIAN / "stress-ng-sched-fifo-not-root.log")
    table = read_text(DEBIAN / "stress-ng-cpu-1-times.log")
    assert parse_text(text + table, "stress-ng").values()["bogo_ops"] == 3540


@pytest.mark.parametrize("line", ["pci 0000:00:1f.4: invalid range 0x0-0xff",  # a kernel's, pasted with the log
                                  "taskset: invalid range, 5 is not allowed, allowed range: 0 to 1"])
def test_words_invalid_range_beside_a_table_refuse_nothing(line: str) -> None:
    """Only stress-ng's own range messages (taskset, --mbind, the --*-numa options, resctrl) say it ran nothing, and
    a log with rows ran: its figures are read. The `: invalid range` check matched any unprefixed line and refused
    the run as bad-argument."""
    text = read_text(DEBIAN / "stress-ng-mlock-1-brief.log")
    for log in (text + line + "\n", line + "\n" + text):
        assert parse_text(log, "stress-ng").values()["nanosecs_per_mlock_call"] == 2669.42


def test_a_kernel_line_with_the_words_is_no_stress_ng_message() -> None:
    with pytest.raises(ParseFailure) as refused:
        parse_text("pci 0000:00:1f.4: invalid range 0x0-0xff\n", "stress-ng")
    assert refused.value.reason != "bad-argument"


IOPRIO = [  # core-io-priority.c's words by version (review r10, L1): only the first was read
    ("Cannot set I/O priority: errno=1 (Operation not permitted)", "permission-denied"),  # up to 0.18
    ("Cannot set I/O priority, errno=1 (Operation not permitted)", "permission-denied"),  # 0.19, 0.20
    ("cannot set I/O priority, errno=1 (Operation not permitted)", "permission-denied"),  # 0.21
    ("stress-ng: error: [4242] cannot set I/O priority, errno=1 (Operation not permitted)", "permission-denied"),
    ("stress-ng: error: [4242] cannot set I/O priority, errno=13 (Permission denied)", "permission-denied"),
    ("cannot set I/O priority, errno=22 (Invalid argument)", "fatal"),
]


@pytest.mark.parametrize(("line", "reason"), IOPRIO)
def test_each_version_s_io_priority_refusal_is_named(line: str, reason: str) -> None:
    with pytest.raises(ParseFailure) as refused:
        parse_text(line + "\n", "stress-ng")
    assert refused.value.reason == reason, refused.value
    said = line[line.index("annot set"):]
    assert f"could not set the I/O priority it was asked for (`C{said}`)" in refused.value.detail \
        or f"(`c{said}`)" in refused.value.detail, refused.value.detail
    assert ("needs CAP_SYS_NICE" in refused.value.detail) == (reason == "permission-denied"), refused.value.detail
