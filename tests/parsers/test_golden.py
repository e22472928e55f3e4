"""Golden-file tests: every file of tests/corpus/ parses to the figures stored in golden/, or fails
with its stored reason. Helper files are skipped with their reason. Regenerate with
`PODTAX_REGEN_GOLDEN=1 pytest tests/parsers` and review each diff against the log by eye."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from podtax.cli.parse import as_dict
from podtax.parsers import ParseFailure, parse_text

from tests.parsers.corpus_index import GOLDEN, HINTS, all_files, golden_path, log_files, read_text, rel, skip_reason

REGEN = os.environ.get("PODTAX_REGEN_GOLDEN") == "1"


def outcome(text: str, tool: str | None) -> dict[str, Any]:
    try:
        return as_dict(parse_text(text, tool))
    except ParseFailure as failure:
        return {"error": {"reason": failure.reason, "detail": failure.detail}}


def compute(path: Path) -> dict[str, Any]:
    text = read_text(path)
    cases = {"auto": outcome(text, None)}
    for hint in HINTS.get(rel(path), ()):
        cases[hint] = outcome(text, hint)
    return {"file": rel(path), "cases": cases}


@pytest.mark.parametrize("path", log_files(), ids=rel)
def test_corpus_file(path: Path) -> None:
    actual = json.loads(json.dumps(compute(path)))
    target = golden_path(path)
    if REGEN:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert target.exists(), f"no golden for {rel(path)}: run PODTAX_REGEN_GOLDEN=1 pytest tests/parsers"
    expected = json.loads(target.read_text(encoding="utf-8"))
    assert actual == expected


def test_every_corpus_file_is_accounted_for() -> None:
    files = all_files()
    assert len(files) > 90
    logs = log_files()
    helpers = {rel(p): skip_reason(p) for p in files if skip_reason(p)}
    assert len(logs) + len(helpers) == len(files)
    # Helper files (README, COMMANDS.tsv, hwbench `output`/`version-*`) are not logs; each has its reason.
    assert all(helpers.values()) and "README.md" in helpers and len(helpers) < 60
    goldens = {p.relative_to(GOLDEN).as_posix().removesuffix(".json") for p in GOLDEN.rglob("*.json")}
    assert goldens == {rel(p) for p in logs}, "golden files and corpus logs differ"
    for hinted in HINTS:
        assert hinted in goldens


def test_golden_outcomes_summary() -> None:
    """The corpus logs that must FAIL, and why (everything else must parse)."""
    failures = {}
    for path in log_files():
        case = json.loads(golden_path(path).read_text(encoding="utf-8"))["cases"]["auto"]
        if "error" in case:
            failures[rel(path)] = case["error"]["reason"]
    assert failures.get("debian12-x86_64/hdparm-not-permitted.log") == "permission-denied"
    assert failures.get("debian12-x86_64/sysbench-bad-arg.log") == "bad-argument"
    assert failures.get("debian12-x86_64/stress-ng-bad-flag.log") == "bad-argument"
    assert failures.get("stress-ng/hwbench/stressngmethods/v16/stdout") == "bad-argument"
    assert failures.get("mixed/raspberry-pi-zero-w/AikonCWD-rpi-benchmark") == "unknown-format"
    assert failures.get("sysbench/container-benchmarks-fedora/docker.txt") == "unknown-format"
    assert failures.get("debian12-x86_64/stress-ng-unknown-exclude.log") == "bad-argument"  # was: truncated
    hinted = json.loads((GOLDEN / "debian12-x86_64/stress-ng-hdd-bad-temp-path.log.json").read_text())
    assert hinted["cases"]["stress-ng-cpu"]["error"]["reason"] == "bad-argument"  # was: unknown-format
    hinted = json.loads((GOLDEN / "debian12-x86_64/sysbench-threads-0.log.json").read_text())
    assert hinted["cases"]["sysbench-cpu"]["error"]["reason"] == "bad-argument"  # was: unknown-format (no banner)
    assert failures.get("debian12-x86_64/hdparm-usage.log") == "bad-argument"  # was: unknown-format
    hinted = json.loads((GOLDEN / "debian12-x86_64/hdparm-unknown-flag.log.json").read_text())
    assert hinted["cases"]["hdparm"]["error"]["reason"] == "bad-argument"  # was: unknown-format (no Timing line)
    for killed in ("stress-ng-cpu-1-instance-killed.log", "stress-ng-cpu-2-instance-killed.log"):
        # stress-ng's own metrics-check says `data is compromised`: no figure (was: read, flagged ERRORS)
        assert failures.get(f"debian12-x86_64/{killed}") == "fatal"
    # 64 bytes moved: `0.00 MiB transferred (0.06 MiB/sec)` times thread start-up (was: 0.06 MiB/s read)
    assert failures.get("debian12-x86_64/sysbench-memory-64-bytes.log") == "implausible"
    for size in ("64K", "1M"):  # 0.0001 and 0.004 s: 61.66 and 209.71 MiB/s, thread start-up (was: read, unflagged)
        assert failures.get(f"debian12-x86_64/sysbench-memory-1K-{size}.log") == "implausible"
    # 0.025 s and 0.069 s (10 GiB of 1 MiB blocks on 2 threads: faster than a 0.2 s run): read, not refused
    for name in ("sysbench-memory-1K-100M.log", "sysbench-memory-read-1M-10G-2t.log"):
        assert f"debian12-x86_64/{name}" not in failures
    # SIGINT at 2 s of a 5 s run: sysbench dies without a report, its block-buffered stdout cut at `Threads started!`
    assert failures.get("debian12-x86_64/sysbench-memory-sigint.log") == "truncated"
    allowed = {"empty", "bad-argument", "permission-denied", "unknown-format", "fatal", "implausible", "truncated"}
    assert set(failures.values()) <= allowed, failures
