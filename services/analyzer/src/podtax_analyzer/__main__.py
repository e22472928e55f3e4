"""`podtax-analyzer`: the DuckDB owner and HTTP API; see `podtax-analyzer --help`."""

from __future__ import annotations

import sys

from podtax.config import AnalyzerSettings
from podtax.service import run_service

from podtax_analyzer.service import serve


def main(argv: list[str] | None = None) -> int:
    return run_service("analyzer", AnalyzerSettings, serve, argv)


def run() -> None:
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
