"""sysbench 1.0.20 memory, fileio, threads and mutex runs (sweep hB2: this project's Debian 12 VM,
tests/corpus/debian12-x86_64, commands in COMMANDS.tsv). Each memory figure read must be the one the log prints
(MiB and MiB/sec as printed, operations and operations per second as printed, not recomputed); the other tests'
reports, and runs that stopped, are refused naming why and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import ParseFailure, parse_run, parse_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "debian12-x86_64"
LATENCY = ("latency_min", "latency_avg", "latency_max")


def _text(name: str) -> str:
    return (CORPUS / name).read_text(encoding="utf-8")


def _memory(ops: int, ops_s: float, mib: float | None, mib_s: float | None, seconds: float,
            latency: tuple[float, ...]) -> dict[str, float]:
    figures = {} if mib is None else {"mib_per_second": mib_s, "mib_transferred": mib}
    figures |= {"operations_per_second": ops_s, "operations": ops, "total_time": seconds, "events": ops}
    figures |= dict(zip((*LATENCY, "latency_p95"), latency, strict=False))
    return figures


@pytest.mark.parametrize(("name", "expected"), [
    # --memory-access-mode=rnd: not echoed; a third of the seq run's 2334.66 MiB/sec
    ("sysbench-memory-read-rnd-1s.log", _memory(838231, 837160.71, 818.58, 817.54, 1.0001, (0.0, 0.0, 20.1, 0.0))),
    # --memory-oper=none: no `MiB transferred` line
    ("sysbench-memory-none-2t.log", _memory(2097152, 5011307.7, None, None, 0.4173, (0.0, 0.0, 13.79, 0.0))),
    # 8-byte blocks, echoed `0KiB`: 48.27 MiB is 6,326,274 x 8 bytes
    ("sysbench-memory-read-8-byte-blocks.log",
     _memory(6326274, 6293338.1, 48.27, 48.01, 1.004, (0.0, 0.0, 5.55, 0.0))),
    # 1 GiB blocks on 2 threads: 2 operations, `(    3.44 per second)`
    ("sysbench-memory-1G-blocks-2t.log", _memory(2, 3.44, 2048.0, 3522.17, 0.5801, (565.45, 572.75, 580.05, 580.02))),
    ("sysbench-memory-read-4K-local-2t.log",
     _memory(524288, 1592904.81, 2048.0, 6222.28, 0.3279, (0.0, 0.0, 32.05, 0.0))),
    # --histogram: 216 histogram rows before `Total operations`
    ("sysbench-memory-histogram-2t.log", _memory(2097152, 3565608.37, 2048.0, 3482.04, 0.5872, (0.0, 0.0, 20.05, 0.0))),
    # --percentile=0: `percentile stats: disabled`, no percentile read
    ("sysbench-memory-percentile-0-2t.log", _memory(2097152, 6453153.08, 2048.0, 6301.91, 0.3236, (0.0, 0.0, 10.17))),
    # --memory-total-size=0: `total size: 0MiB`, stopped by --time
    ("sysbench-memory-total-size-0.log", _memory(3657261, 3641666.5, 3571.54, 3556.31, 1.0029, (0.0, 0.0, 34.56, 0.0))),
    # --events=500000 is not a memory run's limit: 6,488,410 events in its second
    ("sysbench-memory-events-ignored.log",
     _memory(6488410, 6480562.7, 6336.34, 6328.67, 1.0001, (0.0, 0.0, 4.08, 0.0))),
])
def test_memory_figures_equal_the_printed_ones(name: str, expected: dict[str, float]) -> None:
    for tool in (None, "sysbench-memory"):
        parsed = parse_text(_text(name), tool)
        assert parsed.values() == expected
        assert parsed.flags == ()


def test_memory_echoes_what_the_report_prints_and_matches_its_params() -> None:
    small = parse_run("sysbench-memory", _text("sysbench-memory-read-8-byte-blocks.log"),
                      requested={"operation": "read", "block_size": "8", "total_size": "100M", "time": 1, "threads": 1})
    assert small.echoed == {"test": "memory", "threads": 1, "block_size": "0KiB", "total_size": "100MiB",
                            "operation": "read", "scope": "global"}
    assert small.flags == ()
    local = parse_text(_text("sysbench-memory-read-4K-local-2t.log"), "sysbench-memory")
    assert local.echoed["scope"] == "local" and local.echoed["threads"] == 2


@pytest.mark.parametrize(("name", "tool", "reason", "words"), [
    ("sysbench-memory-forced-shutdown.log", "sysbench-memory", "fatal", "forcing shutdown...; --forced-shutdown "
                                                                        "ended the run at its time limit with events "
                                                                        "unfinished (sysbench exits 2): rerun without"),
    ("sysbench-memory-hugetlb-enomem.log", "sysbench-memory", "fatal", "HugeTLB"),
    ("sysbench-memory-block-3000.log", "sysbench-memory", "bad-argument", "memory-block-size: 3000"),
    ("sysbench-cpu-prime-0.log", "sysbench-cpu", "bad-argument", "cpu-max-prime: 0"),
    ("sysbench-memory-sigint.log", "sysbench-memory", "truncated", "did not finish"),
    ("sysbench-fileio-no-prepare.log", None, "fatal", "test_file.0' errno = 2 (No such file or directory); "
                                                      "sysbench: Did you forget to run the prepare step?"),
    ("sysbench-fileio-prepare.log", None, "unknown-format", "prepare or cleanup step"),
    ("sysbench-fileio-cleanup.log", None, "unknown-format", "prepare or cleanup step"),
    ("sysbench-mutex-no-command.log", None, "bad-argument", "requires a command argument"),
    ("sysbench-threads-2t-events.log", None, "unknown-format", "its report names no test"),
    ("sysbench-mutex-2t.log", None, "unknown-format", "its report names no test"),
    ("sysbench-mutex-2t.log", "sysbench-memory", "wrong-tool", "expected a sysbench memory report"),
])
def test_runs_that_give_no_figure_say_why(name: str, tool: str | None, reason: str, words: str) -> None:
    with pytest.raises(ParseFailure) as info:
        parse_text(_text(name), tool)
    assert info.value.reason == reason and words in info.value.detail, info.value.detail


@pytest.mark.parametrize("name", ["sysbench-fileio-rndrw.log", "sysbench-fileio-rndrw-async.log",
                                  "sysbench-fileio-rndrd-direct.log", "sysbench-fileio-rndwr-fsync1.log",
                                  "sysbench-fileio-seqwr.log", "sysbench-fileio-rndrw-2t-report-interval.log"])
def test_a_fileio_run_is_refused_naming_what_measures_disk_io(name: str) -> None:
    with pytest.raises(ParseFailure) as auto:
        parse_text(_text(name))
    assert auto.value.reason == "unknown-format"
    assert "this is a fileio run" in auto.value.detail and "the fio template" in auto.value.detail
    with pytest.raises(ParseFailure) as memory:
        parse_text(_text(name), "sysbench-memory")
    assert memory.value.reason == "wrong-tool" and "found a fileio run" in memory.value.detail
