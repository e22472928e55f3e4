"""nats-server counts an event's NATS headers (Nats-Msg-Id, ~59 bytes here; a traceparent inside a span) against
max_payload beside its body, and closes a connection that publishes past it ('maximum payload exceeded: 8231 vs
8192'): the publish then timed out and the connection stayed closed. Bus._payload checked the body only (nats-py
too). Now it counts the header block (bus.wire_bytes, header_bytes): such an event is refused with a BusError naming
the fix before anything is sent, and the connection stays up. Real nats-server with max_payload 8192."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from podtax import events
from podtax.bus import Bus, BusError, wire_bytes
from podtax.cli import importer

from tests.integration.harness import nats_with_max_payload

MAX_PAYLOAD = 8192


@pytest.fixture
async def small_nats(tmp_path: Path) -> AsyncIterator[str]:
    with nats_with_max_payload(tmp_path, MAX_PAYLOAD) as url:
        yield url


def raw_log(run_id: str, body_bytes: int) -> events.RawLogV1:
    """A raw-log event whose encoded body is `body_bytes` long."""
    run = events.RunSpec.model_validate({"campaign": "c", "run_id": run_id, "node": "n", "env": "host",
                                         "test": "sysbench-cpu", "params": {}})
    now = events.now()

    def made(stdout: str) -> events.RawLogV1:
        return events.raw_log(events.RawLog(run=run, stdout=stdout, exit_code=0, started_at=now, ended_at=now), "t")

    event = made("")
    return made("x" * (body_bytes - len(events.encode(event))))


@pytest.mark.parametrize("many", [False, True], ids=["publish", "publish_many"])
async def test_an_event_within_max_payload_but_not_with_its_headers_is_refused_and_the_connection_stays(
        many: bool, small_nats: str) -> None:
    bus = await Bus.connect(small_nats, "test")
    try:
        await bus.ensure_streams()
        assert bus.nc.max_payload == MAX_PAYLOAD
        over = raw_log("r1", MAX_PAYLOAD - 20)  # its body fits, not with its ~59 bytes of headers
        assert len(events.encode(over)) < MAX_PAYLOAD < wire_bytes(over) == bus.wire_bytes(over)
        with pytest.raises(BusError, match=r"bytes with its NATS headers, above the server's max_payload of 8192"):
            await asyncio.wait_for(bus.publish_many([over]) if many else bus.publish(over), 20)
        # exactly at the limit, headers counted: the server takes it (the count is not short of the server's)
        at = raw_log("r2", MAX_PAYLOAD - (wire_bytes(over) - len(events.encode(over))))
        assert wire_bytes(at) == MAX_PAYLOAD
        await asyncio.wait_for(bus.publish_many([at]) if many else bus.publish(at), 20)
        assert bus.nc.is_connected
    finally:
        await bus.close()


def test_the_importer_counts_the_headers_against_max_payload(tmp_path: Path) -> None:
    """check_events held the encoded body to the server's max_payload: a log whose event fits only without its
    headers passed the check, and the publish closed the connection."""
    (tmp_path / "a.log").write_text("x" * 4000)
    row = importer.Row(2, "a.log", str(tmp_path / "a.log"), "n", "host", "sysbench-cpu", {"threads": 1},
                       datetime(2024, 3, 1, tzinfo=UTC), None)
    body = len(events.encode(importer.build_event(row, "c", 0, None)))
    with pytest.raises(importer.ManifestError, match="does not fit one NATS message"):
        importer.check_events([row], "c", body + 10)
