"""Figures written with a decimal comma (`avg=353,07`) are refused, never read as another number. None of the tools
writes one: under a real de_DE.UTF-8 locale (built with localedef, LC_ALL set) sysbench 1.0.20, stress-ng 0.15.06
(table and --yaml), fio 3.33 (normal, json, terse), iperf3 3.12 (text and -J) and sockperf 3.7 on this project's
Debian 12 host all printed points: none calls setlocale for LC_NUMERIC. A comma comes from a log converted after
the run (a spreadsheet's export, a locale-aware script). fio's text reader took `avg=353,07, stdev=` for a mean of
353 (`,` ends a field there): 353.07 us read as 353, and `avg=3,92,` as 3 (23% off); the other readers refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_text

TESTS = Path(__file__).resolve().parents[1]
_POINT = re.compile(r"(?<![\w.])([0-9]+)\.([0-9]+)(?![0-9.])")  # `353.07`, not a version's `0.15.06`
CASES = [("corpus/debian12-x86_64/sysbench-cpu-prime100000-1t.log", "sysbench-cpu"),
         ("corpus/debian12-x86_64/sysbench-memory-write-1t.log", "sysbench-memory"),
         ("corpus/debian12-x86_64/stress-ng-cpu-1-ops3000-brief.log", "stress-ng-cpu"),
         ("corpus/debian12-x86_64/stress-ng-cpu-all-3s-metrics.log", "stress-ng"),
         ("corpus/debian12-x86_64/fio-seqread-1M-direct-normal.txt", "fio"),
         ("corpus-found/fio-2.2.10-kb-base-1024-text.log", "fio"),  # fio 2's `avg= 3.92,`
         ("corpus-found/fio-3.33-terse-randread-minimal.log", "fio"),
         ("corpus/hdparm/tinkerboard/hdparm.txt", "hdparm"),
         ("corpus-net/sockperf-pp-tcp-64-fullrtt.log", "sockperf")]


def with_decimal_commas(text: str) -> str:
    """Every decimal point a comma, but in the lines naming the tool's version (`fio-3.33`, `version #3.7`)."""
    return "\n".join(line if line.startswith("fio-") or "version" in line else _POINT.sub(r"\1,\2", line)
                     for line in text.split("\n"))


@pytest.mark.parametrize(("name", "tool"), CASES)
@pytest.mark.parametrize("hinted", [True, False])
def test_decimal_commas_are_refused(name: str, tool: str, hinted: bool) -> None:
    text = (TESTS / name).read_text(encoding="utf-8")
    parse_text(text, tool)  # the log as the tool wrote it is read
    converted = with_decimal_commas(text)
    assert converted != text
    with pytest.raises(ParseFailure):
        parse_text(converted, tool if hinted else None)


def test_fio_text_names_the_decimal_comma() -> None:
    text = (TESTS / "corpus/debian12-x86_64/fio-seqread-1M-direct-normal.txt").read_text(encoding="utf-8")
    with pytest.raises(ParseFailure, match=r"decimal comma \(clat \(usec\): .*avg=353,07") as info:
        parse_text(with_decimal_commas(text), "fio")
    assert info.value.reason == "unknown-format"
