"""A web server on a free loopback port for CLI tests against a server at the analyzer's address that is not (or
not only) the analyzer, or in front of any HTTP client under test: `serving(handler)` runs any handler class (`Quiet`:
a handler that logs nothing); `Answer` answers every GET with `Answer.body`
and records the Authorization header of each request in `Answer.seen`."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` served in a thread; yields the server's URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class Quiet(http.server.BaseHTTPRequestHandler):
    """A handler that writes no line per request to stderr."""

    def log_message(self, *_: object) -> None:
        pass


class Answer(Quiet):
    body = b"[]"
    seen: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        Answer.seen.append(self.headers.get("Authorization"))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


@contextmanager
def answering(body: bytes) -> Iterator[str]:
    """An `Answer` server answering `body`, its `seen` emptied; yields its URL."""
    Answer.body, Answer.seen = body, []
    with serving(Answer) as url:
        yield url
