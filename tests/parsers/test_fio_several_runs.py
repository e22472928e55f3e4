"""fio logs that hold several runs are refused, never read as one: appended JSON reports used to
yield the first report alone, appended text runs the SUM of their jobs as if they ran side by side."""

from __future__ import annotations

import pytest
from podtax.parsers import Parsed, ParseFailure, parse_text

from tests.parsers.corpus_index import CORPUS, read_text

JSON_SEQ = read_text(CORPUS / "debian12-x86_64" / "fio-seqread-1M-direct.json")
JSON_RAND = read_text(CORPUS / "debian12-x86_64" / "fio-randread-4k-qd16.json")
TEXT = read_text(CORPUS / "debian12-x86_64" / "fio-seqread-1M-direct-normal.txt")


@pytest.mark.parametrize("tool", [None, "fio"])
def test_two_json_reports_are_refused(tool: str | None) -> None:
    with pytest.raises(ParseFailure) as caught:
        parse_text(JSON_SEQ + JSON_RAND, tool)
    assert caught.value.reason == "unknown-format"
    assert "2 fio JSON reports" in caught.value.detail


@pytest.mark.parametrize("tool", [None, "fio"])
def test_two_text_runs_are_refused_not_summed(tool: str | None) -> None:
    with pytest.raises(ParseFailure) as caught:
        parse_text(TEXT + TEXT, tool)
    assert caught.value.reason == "unknown-format"
    assert "2 fio runs" in caught.value.detail


def test_one_run_still_parses() -> None:
    for text, iops in ((JSON_SEQ, 1560.97561), (TEXT, 64e3 / 23)):  # text `IOPS=2782`: 64 I/Os in 23 ms
        parsed = parse_text(text, "fio")
        assert isinstance(parsed, Parsed)
        assert parsed.metric("read_iops").value == pytest.approx(iops)
