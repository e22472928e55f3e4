"""JSON logs and OpenTelemetry tracing (exporter configurable, off by default).

One trace per run. The runner's dispatch span is the root of a run's trace, and its trace id and
span id are derived from the run id (:func:`run_context`), so every later step of the run joins
that trace even when no context travelled with it (a pod run's log, a restarted runner). The W3C
`traceparent` travels in NATS headers: :func:`inject` adds it when publishing, :func:`extract`
continues it when consuming. Batch consumers start one span per message as a child of that
message's context, linked to the batch span, and publish each follow-up event in the context
of the message it came from (:func:`run_scope`), so parse and store sit in the run's trace too.
The campaign submission is a trace of its own; each run's dispatch span links to it.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

_configured = False
# The ids the next span must take (a run's root span); empty for every other span.
_forced_ids: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar("podtax_forced_ids",
                                                                                    default=None)
# run id -> the context follow-up events of that run are published in (batch consumers).
_run_contexts: contextvars.ContextVar[dict[str, context.Context] | None] = contextvars.ContextVar(
    "podtax_run_contexts", default=None)


def run_ids(run_id: str) -> tuple[int, int]:
    """(trace id, span id) of a run's root span: derived from the run id, never zero."""
    digest = hashlib.sha256(run_id.encode()).digest()
    return (int.from_bytes(digest[:16], "big") or 1), (int.from_bytes(digest[16:24], "big") or 1)


def run_context(run_id: str) -> context.Context:
    """A context whose parent is the run's root span (the runner's dispatch span), wherever it ran."""
    trace_id, span_id = run_ids(run_id)
    parent = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return trace.set_span_in_context(NonRecordingSpan(parent), context.Context())


class _RunIdGenerator(RandomIdGenerator):
    """Random ids, except for a run's root span, which takes the ids derived from its run id."""

    def generate_trace_id(self) -> int:
        forced = _forced_ids.get()
        return forced[0] if forced else super().generate_trace_id()

    def generate_span_id(self) -> int:
        forced = _forced_ids.get()
        if forced:
            _forced_ids.set(None)  # only the root span itself
            return forced[1]
        return super().generate_span_id()


@contextmanager
def run_root_span(name: str, run_id: str, links: list[trace.Link] | None = None,
                  **attributes: Any) -> Iterator[trace.Span]:
    """The root span of a run's trace (the runner opens it when it dispatches the run)."""
    token = _forced_ids.set(run_ids(run_id))
    try:
        with tracer("podtax").start_as_current_span(name, context=context.Context(), links=links or [],
                                                    attributes={"podtax.run_id": run_id, **attributes}) as span:
            _forced_ids.set(None)
            yield span
    finally:
        _forced_ids.reset(token)


def event_run_id(event: Any) -> str | None:
    """The run an event is about (run requested, raw log, result, failure), if any."""
    run = getattr(getattr(event, "data", None), "run", None)
    return getattr(run, "run_id", None)


@contextmanager
def run_scope(contexts: dict[str, context.Context]) -> Iterator[None]:
    """Publish follow-up events of these runs in their own contexts (see :func:`inject_for`)."""
    token = _run_contexts.set(contexts)
    try:
        yield
    finally:
        _run_contexts.reset(token)


def inject_for(headers: dict[str, str], event: Any) -> dict[str, str]:
    """Add the `traceparent` an outgoing event is published in: its run's scope; else the current
    span's. Nothing when the event would only carry its run's own root (published outside any span,
    e.g. with tracing off): every consumer derives that same context from the run id
    (busmessages.message_context), so the header would repeat it, at ~20 µs per message to write and parse."""
    scoped = _run_contexts.get()
    run_id = event_run_id(event)
    if scoped and run_id in scoped:
        return inject(headers, scoped[run_id])
    if run_id and not trace.get_current_span().get_span_context().is_valid:
        return headers
    return inject(headers)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            doc["trace_id"] = format(span.trace_id, "032x")
        for key, value in getattr(record, "fields", {}).items():
            doc[key] = value
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def service_name(service: str) -> str:
    """`podtax-<service>`, whether or not the caller already said `podtax-`."""
    return service if service.startswith("podtax-") else f"podtax-{service}"


def setup(service: str, level: str = "INFO", fmt: str = "json", exporter: str = "none",
          processor: SpanProcessor | None = None) -> None:
    """Configure logging and tracing once per process (`processor`: tests pass an in-memory one)."""
    root = logging.getLogger()
    root.setLevel(level)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else
                         logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.handlers[:] = [handler]
    logging.getLogger("nats").setLevel("WARNING")
    setup_tracing(service, exporter, processor)


def setup_tracing(service: str, exporter: str = "none", processor: SpanProcessor | None = None) -> None:
    """Tracing only (the CLI keeps its own output): once per process; `none` and no processor: off."""
    global _configured
    if _configured or (exporter == "none" and processor is None):
        return
    provider = TracerProvider(resource=Resource.create({"service.name": service_name(service)}),
                              id_generator=_RunIdGenerator())
    if processor is not None:
        provider.add_span_processor(processor)
    if exporter == "console":
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    elif exporter == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise SystemExit("PODTAX_OTEL_EXPORTER=otlp needs: pip install 'podtax[otlp]'") from exc
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _configured = True


def flush() -> None:
    """Export what is buffered (a short-lived process such as the CLI, before it exits)."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.force_flush()


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


def inject(headers: dict[str, str], ctx: context.Context | None = None) -> dict[str, str]:
    """Add the trace context (`traceparent`; the current one unless `ctx`) to outgoing headers."""
    propagate.inject(headers, context=ctx)
    return headers


def extract(headers: Mapping[str, str] | None) -> context.Context:
    return propagate.extract(dict(headers or {}))


@contextmanager
def run_step(name: str, run_id: str, start: datetime | None = None, end: datetime | None = None,
             **attributes: Any) -> Iterator[trace.Span]:
    """A span of a run's trace for a step that happened elsewhere (a pod's run, known from its
    start and end times); what is published inside it is its child."""
    span = tracer("podtax").start_span(name, context=run_context(run_id), attributes=attributes,
                                       start_time=int(start.timestamp() * 1e9) if start else None)
    try:
        with trace.use_span(span, end_on_exit=False):
            yield span
    finally:
        span.end(end_time=int(end.timestamp() * 1e9) if end else None)


def log(logger: logging.Logger, level: int, msg: str, **fields: Any) -> None:
    """Log with structured fields (they become JSON keys)."""
    logger.log(level, msg, extra={"fields": fields})
