"""`make faults`: run every fault scenario (tests/faults/scenario_*.py, each ``run() -> dict``) and print,
per scenario, runs planned / results / recorded failures / cancelled / duplicates / lost.

A scenario passes when nothing is duplicated or lost (and it did not raise). Exit status 1 when one fails.

    python -m tests.faults.suite                 # all of them
    python -m tests.faults.suite nats_cluster    # only those whose name contains a word
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
import traceback
from typing import Any

import tests.faults

COLUMNS = ("planned", "results", "failures", "cancelled", "duplicates", "lost")


def scenarios() -> list[str]:
    return sorted(m.name.removeprefix("scenario_") for m in pkgutil.iter_modules(tests.faults.__path__)
                  if m.name.startswith("scenario_"))


def passed(out: dict[str, Any]) -> bool:
    return out.get("duplicates", 0) == 0 and out.get("lost", 0) == 0 and out.get("ok", True) is not False


def table(rows: list[tuple[str, dict[str, Any] | None, float]]) -> str:
    head = ["scenario", *COLUMNS, "seconds", "verdict"]
    body = []
    for name, out, seconds in rows:
        cells = [str(out.get(c, "-")) if out else "-" for c in COLUMNS]
        verdict = ("skipped: " + str(out["skipped"])) if out and "skipped" in out else (
            "ok" if out and passed(out) else "FAILED")
        body.append([name, *cells, f"{seconds:.0f}", verdict])
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(r) for r in body)])


def main(argv: list[str] | None = None) -> int:
    words = argv if argv is not None else sys.argv[1:]
    if any(w.startswith("-") for w in words):
        print(f"usage: python -m tests.faults.suite [NAME ...] (scenarios: {', '.join(scenarios())})", file=sys.stderr)
        return 2
    chosen = [s for s in scenarios() if not words or any(w in s for w in words)]
    rows: list[tuple[str, dict[str, Any] | None, float]] = []
    for name in chosen:
        print(f"== {name}", flush=True)
        t0 = time.monotonic()
        try:
            out: dict[str, Any] | None = importlib.import_module(f"tests.faults.scenario_{name}").run()
        except Exception:  # noqa: BLE001 - a scenario that raises is a failed scenario; the others still run
            traceback.print_exc()
            out = None
        seconds = time.monotonic() - t0
        print(f"   {out}", flush=True)
        rows.append((name, out, seconds))
    print()
    print(table(rows))
    return 0 if all(out and passed(out) for _, out, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
