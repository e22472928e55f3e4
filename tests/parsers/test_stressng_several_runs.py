"""stress-ng logs that hold several runs (appended with >>) are refused, never read as one run
(the first run's bogo ops used to be reported beside the last run's threads, timeout and RSS)."""

from __future__ import annotations

import pytest
from podtax.parsers import Parsed, ParseFailure, parse_text

from tests.parsers.corpus_index import CORPUS, read_text

ONE_THREAD = read_text(CORPUS / "debian12-x86_64" / "stress-ng-cpu-1-times.log")
TWO_THREADS = read_text(CORPUS / "debian12-x86_64" / "stress-ng-cpu-all-3s-metrics.log")


@pytest.mark.parametrize("tool", [None, "stress-ng", "stress-ng-cpu"])
def test_two_runs_in_one_log_are_refused(tool: str | None) -> None:
    with pytest.raises(ParseFailure) as caught:
        parse_text(ONE_THREAD + TWO_THREADS, tool)
    assert caught.value.reason == "unknown-format"
    assert "cpu stressor reported 2 times" in caught.value.detail


def test_each_run_alone_still_parses() -> None:
    for text, threads, ops in ((ONE_THREAD, 1, 3540), (TWO_THREADS, 2, 10555)):
        parsed = parse_text(text, "stress-ng-cpu")
        assert isinstance(parsed, Parsed)
        assert parsed.echoed["threads"] == threads
        assert parsed.metric("bogo_ops").value == ops
