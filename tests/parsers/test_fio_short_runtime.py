"""The fio template runs --time_based since 36270c7: a run lasts its `runtime`. A run made before (one pass over
`size`, `runtime` only a cap: 5 ms of 10 s asked in the corpus capture, 19% apart in rate from a time_based run) or
stopped early is of a shorter run than its cell's: flagged SHORT (the cell's runs compared are then told apart)
when a job direction ran under 90% of the requested runtime. Real captures (tests/corpus-found, README)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
PARAMS = {"rw": "randread", "bs": "4K", "size": "1M", "iodepth": 16, "direct": True}


def _short(name: str, runtime: int) -> list[str]:
    parsed = parse_run("fio", (FOUND / name).read_text(), "", 0, {**PARAMS, "runtime": runtime})
    return [flag for flag in parsed.flags if flag.startswith("SHORT: ")]


@pytest.mark.parametrize(("name", "runtime"), [("fio-3.33-template-1m-5ms.json", 10),  # the argv before time_based
                                               ("fio-3.33-template-1m-time-based.json", 2),  # 1001 ms of 2 s
                                               ("fio-2.2.10-kb-base-1024-text.log", 2)])  # text: runt= 1000ms of 2 s
def test_a_run_shorter_than_its_runtime_is_flagged_short(name: str, runtime: int) -> None:
    flags = _short(name, runtime)
    assert len(flags) == 1 and f"of the {runtime} s runtime asked" in flags[0], flags
    # the plain cause and what to do, true of an imported log too (review r10, L2: it said "as podtax ran fio before
    # it added that", which an imported log never was)
    cause = "the runtime was only a cap (the run was not time_based, so it ended when its size was done) or the run "
    fix = "re-run it with --time_based and that runtime (as podtax's fio template does) to compare it with the cell's"
    assert f"{cause}ended early" in flags[0] and flags[0].endswith(f"{fix} runs"), flags
    assert "podtax ran fio before" not in flags[0], flags


@pytest.mark.parametrize("name", ["fio-3.33-template-1m-time-based.json", "fio-2.2.10-kb-base-1024-text.log"])
def test_a_run_of_its_whole_runtime_is_not(name: str) -> None:
    assert _short(name, 1) == []


def test_no_runtime_asked_no_flag() -> None:
    parsed = parse_run("fio", (FOUND / "fio-3.33-template-1m-5ms.json").read_text(), "", 0, PARAMS)
    assert not [flag for flag in parsed.flags if flag.startswith("SHORT")]
