"""The parser service: raw logs in, results or parse failures out. No state of its own."""

from __future__ import annotations

import asyncio
import logging

from podtax import events, metrics, subjects
from podtax.batchtuning import tune_for_batches
from podtax.bus import Bus, ConsumerSpec
from podtax.config import ParserSettings
from podtax.derive import derive

log = logging.getLogger("podtax.parser")
SOURCE = "podtax/parser"


def consumer(settings: ParserSettings) -> ConsumerSpec:
    return ConsumerSpec("parser", [f"{subjects.RUN_LOG}.>"], max_deliver=settings.max_deliver,
                        batch=settings.parser_batch)


def derive_all(batch: list[events.Event]) -> tuple[list[events.Envelope], dict[str, str]]:
    """Outcomes of the batch's raw logs, and the logs that made `derive` fail (a bug, not a bad log:
    those become failures), each rejected with its own reason so the rest of the batch goes on."""
    outcomes: list[events.Envelope] = []
    poison: dict[str, str] = {}
    for e in batch:
        if isinstance(e, events.RawLogV1):
            try:
                outcomes.append(derive(e.data, SOURCE))
            except Exception as exc:  # noqa: BLE001 - isolated: only this log is dead-lettered
                log.exception("cannot derive run %s", e.data.run.run_id)
                poison[e.id] = f"poison: {type(exc).__name__}: {exc}"[:1000]
    return outcomes, poison


async def handle_batch(bus: Bus, batch: list[events.Event]) -> dict[str, str]:
    """Derive every raw log of the batch and publish all outcomes (pipelined) before the acks."""
    outcomes, poison = derive_all(batch)
    await bus.publish_many(outcomes)
    for o in outcomes:
        if isinstance(o, events.RunFailedV1):
            metrics.PARSER_OUTCOMES.labels("failure", o.data.reason).inc()
    metrics.PARSER_OUTCOMES.labels("result", "").inc(sum(isinstance(o, events.ResultV1) for o in outcomes))
    failed = sum(isinstance(o, events.RunFailedV1) for o in outcomes)
    if failed:
        log.info("parsed %d logs, %d failed to parse", len(outcomes), failed)
    return poison


async def serve(settings: ParserSettings, bus: Bus, stop: asyncio.Event) -> None:
    tune_for_batches(settings.parser_batch)
    await bus.consume_batches(consumer(settings), lambda batch: handle_batch(bus, batch), stop)

