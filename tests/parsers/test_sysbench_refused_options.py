"""sysbench 1.0.20 refusing an option's value or the test's name (sweep hB3: real captures on this project's Debian 12
VM, tests/corpus/debian12-x86_64, commands in COMMANDS.tsv). Each test checks its own options after the banner and
prints `FATAL: ...`: that is the user's parameters, refused as `bad-argument` (fix the parameters), not `fatal` (a
run that failed), whatever test the caller expected; a real failure after the banner stays `fatal`."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64"


@pytest.mark.parametrize(("name", "said"), [
    ("sysbench-cpu-prime-negative.log", "FATAL: Invalid value of cpu-max-prime: -5."),
    ("sysbench-cpu-prime-0.log", "FATAL: Invalid value of cpu-max-prime: 0."),
    ("sysbench-unknown-test.log", "FATAL: Cannot find benchmark 'foo': no such built-in test, file or module"),
    ("sysbench-memory-oper-foo.log", "FATAL: Invalid value for memory-oper: foo"),
    ("sysbench-memory-block-size-garbage.log", "FATAL: Invalid value for memory-block-size: garbage"),
    ("sysbench-memory-block-3000.log", "FATAL: Invalid value for memory-block-size: 3000"),
    ("sysbench-memory-access-mode-foo.log", "FATAL: Invalid value for memory-access-mode: foo"),
    ("sysbench-memory-scope-foo.log", "FATAL: Invalid value for memory-scope: foo"),
    ("sysbench-fileio-no-test-mode.log", "FATAL: Missing required argument: --file-test-mode"),
    ("sysbench-fileio-test-mode-foo.log", "FATAL: Invalid IO operations mode: foo."),
])
@pytest.mark.parametrize("tool", [None, "sysbench-cpu", "sysbench-memory"])
def test_an_option_refused_after_the_banner_is_a_bad_argument(name: str, said: str, tool: str | None) -> None:
    with pytest.raises(ParseFailure) as info:
        parse_text((CORPUS / name).read_text(encoding="utf-8"), tool)
    assert info.value.reason == "bad-argument"
    assert info.value.detail == f"sysbench rejected its arguments: {said}"


def test_an_option_refused_before_the_banner_is_a_bad_argument() -> None:
    with pytest.raises(ParseFailure) as info:
        parse_text((CORPUS / "sysbench-rand-type-foo.log").read_text(encoding="utf-8"), "sysbench-cpu")
    assert info.value.reason == "bad-argument"
    assert info.value.detail == "sysbench rejected its arguments: FATAL: Invalid random numbers distribution: foo."


@pytest.mark.parametrize("name", ["sysbench-memory-hugetlb-enomem.log", "sysbench-fileio-no-prepare.log"])
def test_a_run_that_failed_after_the_banner_stays_fatal(name: str) -> None:
    with pytest.raises(ParseFailure) as info:
        parse_text((CORPUS / name).read_text(encoding="utf-8"))
    assert info.value.reason == "fatal"
