"""JSON logs and OpenTelemetry tracing (exporter configurable, off by default).

The W3C `traceparent` travels in NATS headers: :func:`inject` adds it when publishing,
:func:`extract` continues the trace when consuming, so one trace follows a run end to end.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

_configured = False


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


def setup(service: str, level: str = "INFO", fmt: str = "json", exporter: str = "none") -> None:
    """Configure logging and tracing once per process."""
    global _configured
    root = logging.getLogger()
    root.setLevel(level)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else
                         logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.handlers[:] = [handler]
    logging.getLogger("nats").setLevel("WARNING")
    if _configured or exporter == "none":
        return
    provider = TracerProvider(resource=Resource.create({"service.name": f"podtax-{service}"}))
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


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


def inject(headers: dict[str, str]) -> dict[str, str]:
    """Add the current trace context (`traceparent`) to outgoing headers."""
    propagate.inject(headers)
    return headers


def extract(headers: Mapping[str, str] | None) -> context.Context:
    return propagate.extract(dict(headers or {}))


def log(logger: logging.Logger, level: int, msg: str, **fields: Any) -> None:
    """Log with structured fields (they become JSON keys)."""
    logger.log(level, msg, extra={"fields": fields})
