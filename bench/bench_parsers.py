"""Parser throughput: logs parsed per second on one core over a mix of the corpus logs.

Run as `python bench/bench_parsers.py`. Prints figures only (no assertions); target >= 20,000 logs/s.
Each corpus log is parsed the way the parser service or `podtax parse` would (successes and
expected failures alike); the mix weights every log once, plus real-run-sized single-run logs.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

from podtax.parsers import ParseFailure, parse_text

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus"
HELPERS = {"README.md", "COMMANDS.tsv", "output", "version", "version-stdout", "version-stderr"}


def corpus_mix() -> list[tuple[str, str | None, str]]:
    """(tool-label, tool hint, text) for every log in the corpus."""
    mix = []
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file()):
        if path.name in HELPERS or path.name.endswith("-version.txt"):
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        if not text.strip():
            continue
        rel = path.relative_to(CORPUS).as_posix()
        hint = "sysbench-cpu" if "container-benchmarks" in rel else "hdparm" if "raspberry" in rel else None
        label = next((t for t in ("sysbench", "stress-ng", "hdparm", "fio")
                      if t.replace("-", "") in rel.replace("-", "") or t in (hint or "")), "other")
        mix.append((label, hint, text))
    return mix


def run(mix: list[tuple[str, str | None, str]], seconds: float) -> tuple[int, float]:
    count, start = 0, time.perf_counter()
    while True:
        for _label, hint, text in mix:
            try:  # noqa: SIM105 - faster than contextlib.suppress in the timed loop
                parse_text(text, hint)
            except ParseFailure:
                pass
        count += len(mix)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return count, elapsed


def main() -> None:
    mix = corpus_mix()
    run(mix, 0.3)  # warm-up
    count, elapsed = run(mix, 3.0)
    print(f"parsers: {count / elapsed:,.0f} logs/s on one core over {len(mix)} corpus logs "
          f"({count} parses in {elapsed:.2f} s; target >= 20,000 logs/s)")
    small = [item for item in mix if len(item[2]) < 2048]
    n, t = run(small, 1.5)
    print(f"  single-run logs under 2 KiB (what a campaign produces): {n / t:,.0f} logs/s "
          f"over {len(small)} logs")
    by_tool: dict[str, list[tuple[str, str | None, str]]] = defaultdict(list)
    for item in mix:
        by_tool[item[0]].append(item)
    for label, items in sorted(by_tool.items()):
        n, t = run(items, 0.7)
        size = sum(len(i[2]) for i in items) / len(items)
        print(f"  {label:<10} {n / t:>10,.0f} logs/s  ({len(items)} logs, mean {size / 1024:.1f} KiB)")


if __name__ == "__main__":
    main()
