"""bench/bench_crossed_mixes.py: --anchor naming no tree of the project is one line and exit 2 (it ended in a
traceback); without --anchor the anchor is measured in the same process with the rule switched off, and a ratio
printed (under `make bench` it printed '-' for every anchor)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_crossed_mixes.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=300,
                          cwd=BENCH.parents[1])


def test_an_anchor_that_is_no_tree_is_one_line_and_exit_2(tmp_path):
    out = _run("--anchor", str(tmp_path / "missing"), "9/1 at 80% no tax")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "not a tree of this project" in out.stderr and "git archive" in out.stderr, out.stderr


def test_without_anchor_the_rule_off_is_the_anchor_and_a_ratio_is_printed():
    out = _run("--seeds", "1", "one machine 10% slow", "9/1 at 80% no tax")
    assert out.returncode == 0, out.stderr
    assert "ratio: false  withheld" in out.stdout and "rule for a run a side toward the other level off" in out.stdout
    (row,) = [line for line in out.stdout.splitlines() if line.startswith("one machine 10% slow")]
    # this tree's false and withheld, the anchor's, the ratios: the anchor measured (a figure, not '-')
    cols = row.removeprefix("one machine 10% slow").split()
    assert len(cols) == 6 and cols[2].endswith("%") and cols[3].endswith("%"), row
