"""sysbench runs every test in LuaJIT; when LuaJIT panics, sysbench prints `PANIC: unprotected error in call to Lua
API (...)` on stderr after its banner and exits 1. podtax said `nonzero-exit` ("read its output for the cause"), or
`truncated` ("the sysbench log stops before the cpu test started") from the log alone. Now `fatal`, quoting the
panic and, for the two known causes, the fix. The panic lines are as sysbench users reported them (not reproduced
here: an x86-64 machine with SELinux off): `bad light userdata pointer` (Debian/Ubuntu sysbench 1.0.18-1.0.20 with
their system LuaJIT 2.1.0-beta3 on 64-bit ARM: LuaJIT/LuaJIT#230 and the issues citing it), `runtime code
generation failed, restricted kernel?` (gentoo/gentoo#4749, a hardened kernel)."""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text

BANNER = "sysbench 1.0.18 (using system LuaJIT 2.1.0-beta3)\n\n"
CASES = {"bad light userdata pointer": "full 64-bit light userdata",
         "runtime code generation failed, restricted kernel?": "executable memory",
         "not enough memory": "LuaJIT, failed"}


@pytest.mark.parametrize(("said", "fix"), CASES.items())
def test_a_luajit_panic_is_fatal_and_named(said: str, fix: str) -> None:
    panic = f"PANIC: unprotected error in call to Lua API ({said})\n"
    for stdout, stderr, exit_code in ((BANNER, panic, 1), (BANNER + panic, "", 1)):
        with pytest.raises(ParseFailure) as failure:
            parse_run("sysbench-cpu", stdout, stderr, exit_code)
        assert failure.value.reason == "fatal" and said in failure.value.detail and fix in failure.value.detail
    with pytest.raises(ParseFailure) as failure:
        parse_text(BANNER + panic)
    assert failure.value.reason == "fatal" and fix in failure.value.detail, failure.value


def test_a_panic_after_the_run_started_is_fatal_too() -> None:
    """A panic after `Initializing worker threads...` (a Lua state per thread: LuaJIT out of memory)."""
    text = (BANNER + "Running the test with following options:\nNumber of threads: 64\n\nPrime numbers limit: 10000\n\n"
            "Initializing worker threads...\n\nPANIC: unprotected error in call to Lua API (not enough memory)\n")
    with pytest.raises(ParseFailure) as failure:
        parse_run("sysbench-cpu", text, "", 1)
    assert failure.value.reason == "fatal" and "not enough memory" in failure.value.detail, failure.value
