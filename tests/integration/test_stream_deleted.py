"""The PODTAX stream deleted under a running service while NATS keeps its store (`nats stream rm PODTAX` by an
operator): the service stopped (exit 3) with 'NATS lost JetStream consumer parser (stream not found): the NATS server
restarted with an empty store, or PODTAX_NATS_URL names another one', sending the operator after a restart or a wrong
address that never happened (fault probe pB, session 52, on the real analyzer and parser). The dead-letter stream,
made before the consumer, is still there: the line now says so, and that the stream was deleted and its messages are
gone if NATS kept its store (or PODTAX_NATS_URL names another server with an older PODTAX_DLQ); the store-lost
wording stays when PODTAX_DLQ went too (test_nats_store_lost). Real nats-server, the real parser process."""

from __future__ import annotations

import asyncio
from pathlib import Path

from podtax import natsserver, subjects
from podtax.bus import Bus

from tests.integration.test_consumer_deleted import _consumers, _parser


async def _delete_stream(url: str) -> None:
    bus = await Bus.connect(url, "test/stream-deleted")
    try:
        await bus.js.delete_stream(subjects.STREAM)
    finally:
        await bus.close()


def test_a_deleted_stream_is_named_so(tmp_path: Path) -> None:
    nats = natsserver.start(tmp_path / "js", log_file=tmp_path / "nats.log")
    proc = None
    try:
        proc = _parser(nats.url, tmp_path)
        assert asyncio.run(_consumers(nats.url, delete=False)) == ["parser"]
        asyncio.run(_delete_stream(nats.url))
        status = proc.wait(60)
        text = (tmp_path / "parser.log").read_text()
        lines = [line for line in text.splitlines() if "parser" in line and "JetStream" in line]
        assert status == 3 and "Traceback" not in text and len(lines) == 1, text
        assert "JetStream stream PODTAX disappeared while this service ran" in lines[0], lines
        # the same signs on another server at the address, with its own older PODTAX_DLQ (review r7's probe): the
        # line names both causes and does not say first that NATS kept its store (review r9 on eff049c8)
        assert ("and PODTAX_DLQ, older than this consumer, is there (NATS kept its store, or PODTAX_NATS_URL names "
                "another server with an older PODTAX_DLQ): if NATS kept its store, the stream was deleted (`nats "
                "stream rm`, or another tool) and the messages it held are gone; stopping") in lines[0], lines
        assert "so NATS kept its store" not in lines[0] and "empty store" not in lines[0], lines
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(15)
        nats.stop()
