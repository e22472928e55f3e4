"""sockperf's usage text as the whole output (audit hG): sockperf 3.7 answers an option it does not know (`-n`,
`--percentile`, `--histogram`) or one given twice with its usage text and exit status 0, and podtax said
`unknown-format: no sockperf ping-pong report found`, as if the log were something else. Now `bad-argument`,
quoting sockperf's own line when it prints one. Real captures tests/corpus-net (COMMANDS.tsv)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus-net"


CASES = {"sockperf-usage-unknown-option.log": "rejected its command line",
         "sockperf-usage-repeated-option.log": "--msg-size should not be repeatable"}


@pytest.mark.parametrize(("name", "said"), CASES.items())
def test_usage_text_is_a_bad_argument(name: str, said: str) -> None:
    with pytest.raises(ParseFailure) as failure:
        parse_run("sockperf", (CORPUS / name).read_text())
    assert failure.value.reason == "bad-argument" and said in failure.value.detail, failure.value


@pytest.mark.parametrize(("name", "said"), CASES.items())
def test_usage_text_is_recognized_without_the_tool_named(name: str, said: str) -> None:
    """`podtax parse` without --tool said `no ... output recognized; pass --tool` (audit hT: sockperf 3.7 here
    answers `--histogram 10:1:100` so too); the usage text is sockperf's own."""
    with pytest.raises(ParseFailure) as failure:
        parse_text((CORPUS / name).read_text())
    assert failure.value.reason == "bad-argument" and said in failure.value.detail, failure.value
