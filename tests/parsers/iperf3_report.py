"""The -J report inside an iperf3 log, read the plain way (the first object that opens a line with `"start"`), for
tests to check each figure the parser reads against the one iperf3 printed."""

from __future__ import annotations

import json
from pathlib import Path


def report_in(path: Path) -> dict:
    """The first -J report in the log at `path`, past any debug objects or --json-stream events."""
    text = path.read_text(encoding="utf-8")
    return json.JSONDecoder().raw_decode(text, text.index('{\n\t"start":'))[0]
