"""sockperf before 3.6 has no `--full-rtt` (added in 3.6), which the template passes: sockperf 3.5 (built from
Mellanox/sockperf's tag, tests/corpus-found/README.md) answers `sockperf ping-pong ... --full-rtt` with its
usage text and exit status 0, and podtax said only "an option this version does not know, or one given twice".
Now the refusal names the version and the fix, only when the usage text is whole (its `-r --range` line, after
where 3.6+ list --full-rtt) and lists no --full-rtt option line, keeping sockperf's own error line (review r5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
NET = Path(__file__).resolve().parents[1] / "corpus-net"


def test_sockperf_3_5_usage_names_the_version_to_install() -> None:
    text = (FOUND / "sockperf-3.5-full-rtt-usage.log").read_text()
    for parse in (lambda: parse_run("sockperf", text), lambda: parse_text(text)):
        with pytest.raises(ParseFailure) as failure:
            parse()
        assert failure.value.reason == "bad-argument", failure.value
        assert "older than 3.6" in failure.value.detail and "install sockperf 3.6" in failure.value.detail


@pytest.mark.parametrize("name", ["sockperf-usage-unknown-option.log", "sockperf-usage-repeated-option.log"])
def test_a_newer_sockperf_usage_is_not_blamed_on_its_version(name: str) -> None:
    """sockperf 3.7's usage text lists --full-rtt: its refusal is about another option."""
    with pytest.raises(ParseFailure) as failure:
        parse_run("sockperf", (NET / name).read_text())
    assert failure.value.reason == "bad-argument" and "older than 3.6" not in failure.value.detail


def test_3_5_under_load_usage_names_the_version_too() -> None:
    """under-load's usage text (3.5) ends with `-r --range`, the line that shows the usage text is whole."""
    with pytest.raises(ParseFailure) as failure:
        parse_run("sockperf", (FOUND / "sockperf-3.5-ul-full-rtt-usage.log").read_text())
    assert "older than 3.6" in failure.value.detail, failure.value


def test_sockperf_s_own_error_line_is_kept() -> None:
    """Real 3.5 output of `ping-pong ... -t 1 -t 2 ... --full-rtt`: upgrading alone would still fail on the -t."""
    text = (FOUND / "sockperf-3.5-repeated-t-usage.log").read_text()
    for parse in (lambda: parse_run("sockperf", text), lambda: parse_text(text)):
        with pytest.raises(ParseFailure) as failure:
            parse()
        detail = failure.value.detail
        assert "Option -t should not be repeatable" in detail and "older than 3.6" in detail, failure.value


def test_a_shell_trace_naming_full_rtt_does_not_hide_the_version() -> None:
    """DERIVED from the real 3.5 capture: a Kubernetes log's shell trace line before it (as in the corpus's
    Kubernetes logs) names --full-rtt, but no option line does; the trace is not sockperf's error line either."""
    trace = "+ sockperf ping-pong -i 10.0.0.2 -p 11111 -t 1 -m 64 --mps max --full-rtt\n"
    with pytest.raises(ParseFailure) as failure:
        parse_run("sockperf", trace + (FOUND / "sockperf-3.5-full-rtt-usage.log").read_text())
    assert "older than 3.6" in failure.value.detail and "+ sockperf" not in failure.value.detail, failure.value


def test_a_cut_newer_usage_text_is_not_blamed_on_the_version() -> None:
    """DERIVED: sockperf 3.7's real usage text (corpus-net) cut to its first 40 lines, before its --full-rtt line
    (line 46 of 61): nothing says which version printed it."""
    cut = "".join((NET / "sockperf-usage-unknown-option.log").read_text().splitlines(keepends=True)[:40])
    with pytest.raises(ParseFailure) as failure:
        parse_run("sockperf", cut)
    assert failure.value.reason == "bad-argument" and "older than 3.6" not in failure.value.detail, failure.value
