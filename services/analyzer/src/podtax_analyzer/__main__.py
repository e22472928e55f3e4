"""`podtax-analyzer`: the DuckDB owner and HTTP API (`podtax-analyzer --help`); `podtax-analyzer report
--db FILE CAMPAIGN` prints a campaign's comparison from a DuckDB file as JSON."""

from __future__ import annotations

import sys

from podtax.config import AnalyzerSettings
from podtax.service import run_service

from podtax_analyzer.service import serve


def main(argv: list[str] | None = None) -> int:
    if argv and argv[0] == "report":  # offline: a campaign's comparison from a DuckDB file, as JSON
        from podtax_analyzer.offline import main as offline

        return offline(argv[1:])
    return run_service("analyzer", AnalyzerSettings, serve, argv, streams_first=False)  # the API first


def run() -> None:
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
