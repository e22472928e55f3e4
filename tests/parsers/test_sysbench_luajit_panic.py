"""A `PANIC:` line never refuses a complete sysbench cpu or memory report.

sysbench's built-in cpu and memory tests (the only ones podtax reads) never start LuaJIT: sysbench 1.0.20 creates a
Lua state only in sb_load_lua, for a Lua script (oltp_*.lua, a user's own) or stdin (checked with gdb, a breakpoint on
luaL_newstate: `sysbench cpu ... run` and `sysbench memory ... run` never reach it, a one-line script does at once).
So LuaJIT's `PANIC: unprotected error in call to Lua API (...)` comes from script runs only, which podtax refuses as
another test anyway. A `PANIC:` line after
a complete real cpu report (tests/corpus-found/sysbench-1.0.20-cpu-rate100.log, 97.18 events/s) is not the report's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run, parse_text

CPU_LOG = (Path(__file__).parent.parent / "corpus-found" / "sysbench-1.0.20-cpu-rate100.log").read_text()


@pytest.mark.parametrize("panic", ["PANIC: unprotected error in call to Lua API (not enough memory)\n",
                                   "PANIC: mode is off\n"])
def test_a_panic_line_after_a_complete_cpu_report_leaves_its_figures(panic: str) -> None:
    for parsed in (parse_text(CPU_LOG + panic), parse_run("sysbench-cpu", CPU_LOG + panic, "", 0)):
        assert parsed.values()["events_per_second"] == 97.18
