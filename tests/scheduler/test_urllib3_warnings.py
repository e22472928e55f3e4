"""The scheduler drops urllib3's 'Retrying (...' warnings (three a call that cannot reach the API server; the
informers and the lease say the outage once) but no other: 3b4c8dc set urllib3.connectionpool to ERROR, which also
hid 'Connection pool is full, discarding connection', the sign that the client's pool is smaller than its binds
(review hR #10). A real urllib3 pool against a refused port and a real HTTP server."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import urllib3
from podtax import natsserver
from podtax_scheduler.service import quiet_retries

from tests.unit.fake_http import Quiet, serving


class _Ok(Quiet):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


@pytest.fixture
def server_url() -> Iterator[str]:
    with serving(_Ok) as url:
        yield url


def _refused_call() -> None:
    pool = urllib3.HTTPConnectionPool("127.0.0.1", natsserver.free_port(), retries=urllib3.Retry(2, backoff_factor=0))
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        pool.request("GET", "/")


def _said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "urllib3.connectionpool"]


def test_retrying_warnings_are_dropped_and_a_full_pool_still_shows(server_url: str,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    pool_log = logging.getLogger("urllib3.connectionpool")
    for installed in list(pool_log.filters):  # an earlier test's serve()
        pool_log.removeFilter(installed)
    caplog.set_level(logging.WARNING, logger="urllib3.connectionpool")
    _refused_call()
    assert len([m for m in _said(caplog) if m.startswith("Retrying (")]) == 2, _said(caplog)  # what is dropped
    caplog.clear()
    quiet_retries()
    quiet_retries()  # serve() may run twice in a process: one filter
    assert len(pool_log.filters) == 1
    _refused_call()
    pool = urllib3.connection_from_url(server_url, maxsize=1, block=False)
    answers = [pool.urlopen("GET", "/", preload_content=False) for _ in range(2)]  # two connections at once
    for answer in answers:
        answer.read()
        answer.release_conn()  # the second finds the pool of 1 full
    said = _said(caplog)
    assert not [m for m in said if m.startswith("Retrying (")], said
    assert [m for m in said if m.startswith("Connection pool is full")], said
