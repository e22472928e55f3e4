"""The waiting line of long requests (podtax.cli.waiting): a 200,000-run campaign's workbook takes the analyzer
about 20 s, and `podtax export` showed nothing meanwhile. On a terminal the line counts the seconds and is erased
at the end; elsewhere (a script reading stderr) nothing is written."""

from __future__ import annotations

import io
import threading
import time

from podtax.cli.waiting import waiting


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the waiting line never came"
        time.sleep(0.01)


def test_on_a_terminal_the_line_counts_and_is_erased():
    term = Terminal()
    with waiting("waiting for the analyzer", stream=term, after=0.01, every=0.01):
        _until(lambda: term.getvalue().count("waiting for the analyzer: ") >= 2)
    text = term.getvalue()
    assert text.startswith("\rwaiting for the analyzer: 0 s")
    last = text.rsplit("\r", 2)
    assert last[-1] == "" and last[-2].strip() == "", repr(text[-80:])  # erased, the cursor back at the start


def test_a_short_request_writes_nothing():
    term = Terminal()
    with waiting("waiting", stream=term, after=60.0):
        pass
    assert term.getvalue() == ""


def test_not_a_terminal_writes_nothing():
    pipe = io.StringIO()
    with waiting("waiting", stream=pipe, after=0.0, every=0.0):
        assert not [t for t in threading.enumerate() if t.name == "podtax-waiting"]  # no line will come
    assert pipe.getvalue() == ""
