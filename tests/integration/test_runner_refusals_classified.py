"""Which answers of a JetStream publish the runner's outbox takes for a refusal (said in an error naming the fix, why
written for `podtax campaign status`, the report kept in the runner's bucket for the next runner) and which for NATS
away (a warning, sent again, nothing kept), each made by a real nats-server: the events stream given an admin's limit
(max_msg_size: 10054; max_bytes, max_msgs, max_msgs_per_subject: 10077), sealed (10109), deleted (nats-py's 'no
response from stream', the stream not found), or the server stopped. Before, 10054, 10109 and the deleted stream were
taken for NATS away ('NATS stopped or restarting?'), no copy kept: a runner stop lost the report."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from nats.js.api import StreamConfig
from nats.js.errors import APIError, ServiceUnavailableError
from podtax import events, natsserver, subjects
from podtax.bus import Bus, Unacked, at_limit, refusal_text, wire_bytes
from podtax.busrefusal import FULL, STORE_CLOSED, lasting
from podtax_runner import outbox

from tests.integration.harness import nats_with_max_payload
from tests.integration.test_runner_kept_copies import a_log, keys
from tests.integration.test_runner_stream_full_held import wait_for_async

log = logging.getLogger("podtax.runner.test")


def limited(**fields: Any) -> Callable[[StreamConfig], None]:
    def change(cfg: StreamConfig) -> None:
        for k, v in fields.items():
            setattr(cfg, k, v)
    return change


# case -> (how the stream is changed, what the refusal says; None: NATS away)
CASES: dict[str, tuple[Callable[[StreamConfig], None] | None, str | None]] = {
    "max_msg_size": (limited(max_msg_size=200), f"above the events stream {subjects.STREAM}'s max_msg_size"),
    "max_bytes": (limited(max_bytes=300), "its stream is full (maximum bytes exceeded)"),
    "max_msgs": (limited(max_msgs=1), "holds its limit of messages (maximum messages exceeded); raise it as a NATS "
                 "admin (`nats stream edit PODTAX --max-msgs <count>`"),
    "per_subject": (limited(max_msgs_per_subject=1), "holds its limit of messages"),
    "sealed": (limited(sealed=True), f"the events stream {subjects.STREAM} is sealed"),
    "deleted": (None, f"the events stream {subjects.STREAM} is not there"),
    "server_stopped": (None, None),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_publish_answer_is_a_refusal_or_nats_away(case: str, nats_server: natsserver.NatsServer,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    change, says = CASES[case]
    caplog.set_level(logging.INFO, logger="podtax.runner")
    bus = await Bus.connect(nats_server.url, "test")
    run = events.RunSpec(run_id="rc-0123456789abcdef", campaign="rc", node="n1", env="kubernetes",
                         test="sysbench-cpu", params={})
    box = outbox.Outbox(bus, log, "pod run", "the next runner runs it again")
    kept: list[str] = []
    try:
        await bus.ensure_streams()
        kv = await bus.kv(subjects.RUNNER_BUCKET)
        await bus.js.publish(a_log(run).subject, b"{}")  # one message on the subject the log goes to
        if change is not None:
            info = await bus.js.stream_info(subjects.STREAM)
            change(info.config)
            await bus.js.update_stream(info.config)
        elif case == "deleted":
            await bus.js.delete_stream(subjects.STREAM)
        sending = asyncio.create_task(box.send(run, a_log(run), "log"))
        if case == "server_stopped":
            await asyncio.sleep(0)
            nats_server.stop()
            await wait_for_async(lambda: asyncio.sleep(0, "NATS stopped or restarting?" in caplog.text), 60,
                                 "the log said held")
        else:
            await wait_for_async(lambda: asyncio.sleep(0, box.holding().get(run.run_id)), 30, "why the log is held")
            kept = await keys(kv)
        why = box.holding().get(run.run_id, "")
        box.stop()
        assert await sending is False
    finally:
        await bus.close()
    if says is None:  # NATS away: a warning, no reason recorded, nothing kept
        assert why == "" and "NATS stopped or restarting?" in caplog.text, (why, caplog.text)
        return
    assert says in why and why.startswith("NATS refuses its log: "), why
    assert kept == [outbox.kept_key(run)], kept
    assert "NATS stopped or restarting?" not in caplog.text, caplog.text


async def held_why(tmp_path: Path, max_payload: int, run: events.RunSpec, big: events.Envelope,
                   within_s: float) -> str:
    """Why the runner's outbox holds `big` (the run's log) sent to a real nats-server of that max_payload; the send,
    stopped then, reports it not published."""
    with nats_with_max_payload(tmp_path, max_payload) as url:
        nc = await Bus.connect(url, "test")
        box = outbox.Outbox(nc, log, "pod run", "the next runner runs it again")
        try:
            await nc.ensure_streams()
            sending = asyncio.create_task(box.send(run, big, "log"))
            await wait_for_async(lambda: asyncio.sleep(0, box.holding().get(run.run_id)), within_s,
                                 "why the log is held")
            why = box.holding()[run.run_id]
            box.stop()
            assert await sending is False
        finally:
            await nc.close()
    return why


async def test_a_report_above_the_servers_max_payload_is_a_refusal(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Bus.publish refuses an event above the server's max_payload before sending it (bus.TooBig); the runner's bucket
    refuses the copy too (the same limit): an error says it is held in memory only. Before: 'NATS stopped or
    restarting?' every 10 s, and the fix named was the host agent's output cap (no bound on a runner's report)."""
    caplog.set_level(logging.INFO, logger="podtax.runner")
    run = events.RunSpec(run_id="rp-0123456789abcdef", campaign="rp", node="n1", env="kubernetes",
                         test="sysbench-cpu", params={})
    big = a_log(run)
    big = big.model_copy(update={"data": big.data.model_copy(update={"stdout": "x" * 3000})})
    why = await held_why(tmp_path, 2000, run, big, 30)  # the streams' and the bucket's requests fit in 2,000
    size = wire_bytes(big)
    assert why == f"NATS refuses its log: it is {size:,} bytes with its NATS headers, above the server's max_payload " \
        "of 2,000; raise max_payload in nats-server's configuration, then restart nats-server (a connection keeps " \
        "the max_payload it met: a reload does not reach it; the runner sends the report once it has connected " \
        "again)", why
    assert "could not be kept in the runner's bucket too" in caplog.text, caplog.text
    assert "NATS stopped or restarting?" not in caplog.text and "OUTPUT_CAP" not in caplog.text, caplog.text


RL_RUN = events.RunSpec(run_id="rl-0123456789abcdef", campaign="rl", node="n1", env="kubernetes", test="sysbench-cpu",
                        params={})


def too_large_log() -> tuple[events.RunSpec, events.RawLogV1]:
    """A run and its log of 33 MiB: above the 32 MiB a file stream stores in one message."""
    big = a_log(RL_RUN)
    return RL_RUN, big.model_copy(update={"data": big.data.model_copy(update={"stdout": "x" * (33 << 20)})})


async def test_a_message_too_large_is_the_same_refusal_from_publish_and_publish_many(tmp_path: Path) -> None:
    """publish_many's Unacked kept JetStream's err_code alone: 10077 'message too large' then counted as want of room
    (at_limit: 'run the import again once NATS answers', a batch held for ever) where publish's APIError is a lasting
    refusal (review rO, q3.py: publish_many at_limit=True lasting=True, publish at_limit=False). Real nats-server."""
    _, big = too_large_log()
    with nats_with_max_payload(tmp_path, 48 << 20) as url:
        bus = await Bus.connect(url, "test")
        try:
            await bus.ensure_streams()
            for publish in (lambda: bus.publish_many([big]), lambda: bus.publish(big)):
                with pytest.raises(Exception) as caught:  # noqa: PT011 - publish's is nats-py's APIError
                    await publish()
                assert not at_limit(caught.value) and lasting(caught.value), repr(caught.value)
                text = refusal_text(caught.value) if isinstance(caught.value, APIError) else str(caught.value)
                assert "32 MiB" in text and "print less" not in text and "max-bytes" not in text, text
        finally:
            await bus.close()


async def test_a_store_closed_is_nats_away_from_publish_as_from_publish_many(
        nats_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """10077 'store is closed' (the stream stopped under the publish) is NATS away: publish_many raised it as Unacked
    (a BusError, NatsLost), publish as nats-py's raw APIError, a traceback for every caller catching BusError
    (cli_deadline.run, publish_once, the agent). Not produced by a real server here (hO: a stream deleted under
    publishes answers 'no response from stream'): JetStream's answer is given to the real connection's publish."""
    bus = await Bus.connect(nats_url, "test")
    try:
        await bus.ensure_streams()

        async def closed(*_: Any, **__: Any) -> None:
            raise ServiceUnavailableError(code=503, err_code=FULL, description=STORE_CLOSED)

        monkeypatch.setattr(bus.js, "publish", closed)
        with pytest.raises(Unacked) as caught:
            await bus.publish(a_log(RL_RUN))
        assert caught.value.err_code is None and not at_limit(caught.value), caught.value
        assert "full" not in str(caught.value), caught.value
    finally:
        await bus.close()


async def test_a_report_above_what_a_file_stream_stores_is_not_said_as_a_full_stream(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Under a max_payload above 32 MiB, JetStream refuses a bigger message with 10077 'message too large' (the code of
    a full stream: nats-server filestore.go, rlBadThresh). Before, it was said as one: 'its stream is full (message
    too large); raise its size limit ... --max-bytes', a fix that changes nothing."""
    caplog.set_level(logging.INFO, logger="podtax.runner")
    run, big = too_large_log()
    why = await held_why(tmp_path, 48 << 20, run, big, 60)
    assert why.startswith(f"NATS refuses its log: it is {wire_bytes(big):,} bytes with its NATS headers, above "
                          "the 32 MiB JetStream stores in one message of a file stream (message too large, JetStream "
                          "error 10077): no setting raises it"), why
    assert "full" not in why and "max-bytes" not in why, why
