"""Property tests: random text and mutated corpus logs never crash a parser — every call yields a
Parsed (with finite figures) or a ParseFailure with a known reason."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from podtax.parsers import Parsed, ParseFailure, parse_run, parse_text

from tests.parsers.corpus_index import log_files, read_text

REASONS = {"nonzero-exit", "fatal", "empty", "truncated", "permission-denied", "unknown-format",
           "unsupported-version", "bad-argument", "wrong-tool", "implausible"}
TOOLS = [None, "sysbench", "sysbench-cpu", "sysbench-memory", "stress-ng", "stress-ng-cpu", "hdparm", "fio"]
TESTS = ["sysbench-cpu", "sysbench-memory", "stress-ng-cpu", "hdparm", "fio"]
LOGS = [read_text(p) for p in log_files() if p.stat().st_size < 40_000]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALPHABET = st.characters(codec="utf-8", exclude_categories=("Cs",))
FRAGMENTS = st.sampled_from(["stress-ng: metrc: [1] ", "sysbench 1.0.20 (x)\n", "FATAL: x\n", "\r\n", "\n",
                             " Timing cached reads: ", "{", '"fio version"', "nan", "inf", "1e999", "-1",
                             "events per second: ", "MiB transferred (", "#podtax phase=before\n", "🐢",
                             "stressor bogo ops\n", "cpu 1 2 3 4 5 6\n", "metrics:\n    - stressor: cpu\n"])


def check(call, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
    try:
        parsed = call(*args, **kwargs)
    except ParseFailure as failure:
        assert failure.reason in REASONS and failure.detail
        return
    assert isinstance(parsed, Parsed)
    assert parsed.metrics
    assert all(math.isfinite(m.value) for m in parsed.metrics)


@SETTINGS
@given(text=st.text(alphabet=ALPHABET, max_size=400) | st.lists(FRAGMENTS | st.text(max_size=12)).map("".join),
       tool=st.sampled_from(TOOLS))
def test_random_text(text: str, tool: str | None) -> None:
    check(parse_text, text, tool)


@SETTINGS
@given(data=st.data(), log=st.sampled_from(LOGS), tool=st.sampled_from(TOOLS))
def test_mutated_corpus(data: st.DataObject, log: str, tool: str | None) -> None:
    text = log
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["cut", "delete", "insert", "swap", "digits"]))
        at = data.draw(st.integers(0, len(text)))
        if kind == "cut":
            text = text[:at]
        elif kind == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 200)):]
        elif kind == "insert":
            text = text[:at] + data.draw(FRAGMENTS | st.text(alphabet=ALPHABET, max_size=30)) + text[at:]
        elif kind == "swap":
            lines = text.split("\n")
            if len(lines) > 2:
                i = data.draw(st.integers(0, len(lines) - 2))
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
            text = "\n".join(lines)
        else:
            text = text[:at] + data.draw(st.sampled_from(["9" * 400, "0.0", "x", "-"])) + text[at + 1:]
    check(parse_text, text, tool)


@SETTINGS
@given(log=st.sampled_from(LOGS), test=st.sampled_from(TESTS), code=st.sampled_from([0, 1, None]),
       split=st.integers(0, 5000), threads=st.integers(1, 4), recorded=st.none() | st.text(max_size=40))
def test_parse_run_any_input(log: str, test: str, code: int | None, split: int, threads: int,
                             recorded: str | None) -> None:
    check(parse_run, test, log[:split], log[split:], code, {"threads": threads, "events": 100, "ops": 100},
          recorded)
