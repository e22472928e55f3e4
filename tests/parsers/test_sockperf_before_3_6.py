"""sockperf before 3.6 has no `--full-rtt` (added in 3.6), which the template passes: sockperf 3.5 (built from
Mellanox/sockperf's tag, tests/corpus-found/README.md) answers `sockperf ping-pong ... --full-rtt` with its
usage text and exit status 0, and podtax said only "an option this version does not know, or one given twice".
Now the refusal names the version and the fix."""

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
