"""`podtax-parser`: configured by PODTAX_* environment variables (see `podtax-parser --help`)."""

from __future__ import annotations

import sys

from podtax.config import ParserSettings
from podtax.service import run_service

from podtax_parser.service import serve


def main(argv: list[str] | None = None) -> int:
    return run_service("parser", ParserSettings, serve, argv)


def run() -> None:
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
