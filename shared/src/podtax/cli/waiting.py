"""A line that says the CLI is still waiting, for requests that take long: the analyzer makes a 200,000-run
campaign's workbook in about 20 s, its HTML page in 15 s, and the terminal showed nothing meanwhile."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


@contextmanager
def waiting(what: str, stream: TextIO | None = None, after: float = 2.0, every: float = 1.0) -> Iterator[None]:
    """While the block runs, `what: N s` on ``stream`` (stderr), rewritten in place every ``every`` seconds once
    ``after`` seconds have passed, and erased when the block ends. Only on a terminal: a script reading stderr gets
    no such line."""
    out = stream if stream is not None else sys.stderr
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        yield
        return
    done = threading.Event()

    def tick() -> None:
        start, width = time.monotonic(), 0
        while not done.wait(every if width else after):
            line = f"{what}: {time.monotonic() - start:.0f} s"
            width = max(width, len(line))
            out.write("\r" + line.ljust(width))
            out.flush()
        if width:
            out.write("\r" + " " * width + "\r")
            out.flush()

    thread = threading.Thread(target=tick, name="podtax-waiting", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
