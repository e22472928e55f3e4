"""Hostile input: numbers int() or float() cannot read, and megabyte-long lines, give a Parsed or a
ParseFailure with a reason, never another exception (these used to raise ValueError/OverflowError)."""

from __future__ import annotations

import json

import pytest
from podtax.parsers import Parsed, ParseFailure, parse_run, parse_text

from tests.parsers.corpus_index import CORPUS, read_text

STRESS = read_text(CORPUS / "debian12-x86_64" / "stress-ng-cpu-1-times.log")
FIO = read_text(CORPUS / "debian12-x86_64" / "fio-seqread-1M-direct.json")
BIG = "9" * 5000  # more digits than int() reads (4,300)


def outcome(text: str, tool: str | None) -> Parsed | ParseFailure:
    try:
        return parse_text(text, tool)
    except ParseFailure as failure:
        return failure


@pytest.mark.parametrize(("text", "tool"), [
    (STRESS.replace("hogs: 1 cpu", "hogs: ² cpu"), "stress-ng"),  # '²'.isdigit() but int('²') fails
    (STRESS.replace("hogs: 1 cpu", f"hogs: {BIG} cpu"), "stress-ng"),
    (STRESS + "stress-ng: info:  [7119] failed: ²\n", "stress-ng"),
    (STRESS + f"stress-ng: info:  [7119] failed: {BIG}\n", None),
    (STRESS.replace("setting to a 2 second", f"setting to a {BIG} second"), "stress-ng"),
])
def test_unreadable_integers_in_stress_ng_are_ignored(text: str, tool: str | None) -> None:
    parsed = outcome(text, tool)
    assert isinstance(parsed, Parsed)
    assert parsed.metric("bogo_ops").value == 3540
    assert "threads" not in parsed.echoed or parsed.echoed["threads"] == 1
    assert "timeout" not in parsed.echoed or parsed.echoed["timeout"] == 2


def test_fio_options_that_are_not_integers_stay_text() -> None:
    options = json.dumps({"iodepth": "²", "bs": BIG})
    doc = ('{"fio version": "fio-3.33", "global options": ' + options + ', "jobs": '
           '[{"jobname": "a", "read": {"total_ios": 1, "iops": 5, "bw": 7}}]}')
    parsed = outcome(doc, "fio")
    assert isinstance(parsed, Parsed)
    assert parsed.echoed["iodepth"] == "²" and parsed.echoed["bs"] == BIG
    assert parsed.metric("read_iops").value == 5


@pytest.mark.parametrize("key", ['"bw" : ', '"99.000000" : '])
def test_fio_json_integer_too_large_for_a_float_is_refused(key: str) -> None:
    failure = outcome(FIO.replace(key, key + "9" * 400, 1), "fio")
    assert isinstance(failure, ParseFailure)
    assert failure.reason == "unknown-format" and "not a finite number" in failure.detail


def test_fio_text_error_code_too_long_to_read_is_fatal() -> None:
    failure = outcome(f"fio-3.33\nx: (groupid=0, jobs=1): err={BIG}: pid=1\n", "fio")
    assert isinstance(failure, ParseFailure) and failure.reason == "fatal"


# A megabyte of garbage on one line, and a megabyte of lines that almost match each format.
NEAR = {
    "stress-ng": "stress-ng: metrc: [1] cpu 1 2 3 4 5 x\n",
    "sysbench": "    events per second: x\nLatency (ms):\n min: \n",
    "hdparm": " Timing cached reads: 1 MB in 2 seconds = x MB/sec\n",
    "fio": "x: (groupid=0, jobs=1): err= 0\n  read: IOPS=1, BW=x\n",
}


@pytest.mark.parametrize("tool", [None, *NEAR])
def test_megabyte_inputs_end_with_a_reason(tool: str | None) -> None:
    garbage = ("a: " + " " * 100 + "b" + "\t" * 50) * 6000
    near = (NEAR[tool] if tool else "".join(NEAR.values())) * (1_000_000 // 60)
    for text in (garbage, near):
        failure = outcome(text, tool)
        assert isinstance(failure, ParseFailure), tool
        assert failure.reason in {"unknown-format", "truncated", "wrong-tool"}, failure


@pytest.mark.parametrize("log", ["debian12-x86_64/sysbench-cpu-prime100000-1t.log",
                                 "debian12-x86_64/sysbench-memory-read-1M-2t.log"])
def test_a_sysbench_log_cut_inside_its_latency_block_is_truncated(log: str) -> None:
    """Cut before `sum:` (the block's last line), the 95th percentile is lost: refused as truncated instead of
    parsed with one metric fewer and no word about it."""
    text = read_text(CORPUS / log)
    full = parse_text(text, None)
    assert any(m.name == "latency_p95" for m in full.metrics)
    cut = text[:text.index("95th percentile")]
    with pytest.raises(ParseFailure) as info:
        parse_text(cut, None)
    assert info.value.reason == "truncated" and "sum" in info.value.detail


@pytest.mark.parametrize("text", ["\0" * 8, "\ufeff", "\x1b[0m", "\ufeff\x1b[0m\0"])
def test_a_log_empty_once_cleaned_is_empty_not_a_crash(text: str) -> None:
    """Only a BOM, NULs (a preallocated file never written) or colour codes: was an IndexError."""
    for run in (lambda: parse_text(text), lambda: parse_run("stress-ng-cpu", text)):
        with pytest.raises(ParseFailure) as failure:
            run()
        assert failure.value.reason == "empty"
