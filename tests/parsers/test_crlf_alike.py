"""Every parser reads a log with CRLF line ends as the same log with LF: the same figures, flags, tool, version and
build, or the same failure. podtax.capture_text (an imported run's capture: the analyzer keeps one run of a log and
its CRLF copy) rests on it. Every corpus log, as every importable test."""

from __future__ import annotations

from typing import Any

from podtax import parsers
from podtax.cli.manifest import IMPORTABLE
from podtax.safefiles import decode_log

from tests.parsers.corpus_index import all_files, rel, skip_reason


def _outcome(test: str, text: str) -> tuple[Any, ...]:
    try:
        p = parsers.parse_run(test, text, requested={})
    except parsers.ParseFailure as exc:
        return ("failed", exc.reason, exc.detail)
    return (p.tool, p.tool_version, p.tool_build, [(m.name, m.value, m.unit) for m in p.metrics], p.flags,
            sorted(dict(p.echoed).items()))


def test_every_corpus_log_parses_alike_with_crlf_line_ends() -> None:
    differ, compared = [], 0
    for path in all_files():
        if skip_reason(path):
            continue
        lf = decode_log(path.read_bytes()).replace("\r\n", "\n")
        for test in IMPORTABLE:
            compared += 1
            if _outcome(test, lf) != _outcome(test, lf.replace("\n", "\r\n")):
                differ.append(f"{rel(path)} as {test}")
    assert compared > 1000 and not differ, differ
