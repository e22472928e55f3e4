"""Prometheus metrics every podtax service exposes on its health port at `GET /metrics`.

Names follow Prometheus conventions (`podtax_` prefix, base units, `_total` for counters,
`_seconds` for durations). The bus records the messaging metrics for every consumer, so each
service gets them without code of its own; services add what only they know (runs dispatched,
parse failures by reason, DuckDB write latency, campaign progress). One process-wide registry
(`REGISTRY`); the scheduler keeps its own registry and port (it predates this module).

| metric | type | labels | meaning |
|---|---|---|---|
| podtax_messages_handled_total | counter | consumer, outcome (ack, retry, dead) | messages a consumer finished with |
| podtax_message_redeliveries_total | counter | consumer | messages that arrived again (delivery > 1) |
| podtax_consumer_pending_messages | gauge | consumer | messages in the stream not yet delivered (lag) |
| podtax_consumer_held_messages | gauge | consumer | messages held: a dependency is down (disk full, DB out of memory) |
| podtax_handler_duration_seconds | histogram | consumer | one message's (or one batch's) handling time |
| podtax_events_published_total | counter | type | events this process published |
| podtax_runner_runs_dispatched_total | counter | env | runs sent to an agent, a Job or an executor |
| podtax_runner_runs_finished_total | counter | outcome (result, failed) | run outcomes the runner saw |
| podtax_runner_campaign_runs | gauge | campaign, state (planned, in_flight, done, failed) | campaign progress |
| podtax_agent_runs_total | counter | test, outcome (ok, failed, refused, timeout) | runs the host agent executed |
| podtax_agent_run_duration_seconds | histogram | test | a benchmark's wall time on the host |
| podtax_parser_outcomes_total | counter | outcome (result, failure), reason | logs parsed; failures by reason |
| podtax_analyzer_write_duration_seconds | histogram | | one DuckDB batch write (commit included) |
| podtax_analyzer_events_stored_total | counter | | events committed to DuckDB |
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

REGISTRY = CollectorRegistry()
_FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_RUNS = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

MESSAGES = Counter("podtax_messages_handled", "Messages a consumer finished with, by outcome.",
                   ["consumer", "outcome"], registry=REGISTRY)
REDELIVERIES = Counter("podtax_message_redeliveries", "Messages that arrived again (delivery count > 1).",
                       ["consumer"], registry=REGISTRY)
PENDING = Gauge("podtax_consumer_pending_messages", "Messages in the stream not yet delivered to the consumer.",
                ["consumer"], registry=REGISTRY)
HELD = Gauge("podtax_consumer_held_messages", "Messages held (retried in place) because a dependency is down.",
             ["consumer"], registry=REGISTRY)
HANDLER_SECONDS = Histogram("podtax_handler_duration_seconds", "Time to handle one message or one batch.",
                            ["consumer"], buckets=_FAST, registry=REGISTRY)
PUBLISHED = Counter("podtax_events_published", "Events published by this process.", ["type"], registry=REGISTRY)

RUNS_DISPATCHED = Counter("podtax_runner_runs_dispatched", "Runs sent to a host agent, a Job or an executor.",
                          ["env"], registry=REGISTRY)
RUNS_FINISHED = Counter("podtax_runner_runs_finished", "Run outcomes the runner saw.", ["outcome"],
                        registry=REGISTRY)
CAMPAIGN_RUNS = Gauge("podtax_runner_campaign_runs", "Runs of a campaign by state.", ["campaign", "state"],
                      registry=REGISTRY)

AGENT_RUNS = Counter("podtax_agent_runs", "Benchmark runs the host agent finished, by outcome.",
                     ["test", "outcome"], registry=REGISTRY)
AGENT_RUN_SECONDS = Histogram("podtax_agent_run_duration_seconds", "A benchmark's wall time on the host.",
                              ["test"], buckets=_RUNS, registry=REGISTRY)

PARSER_OUTCOMES = Counter("podtax_parser_outcomes", "Raw logs parsed, by outcome and failure reason.",
                          ["outcome", "reason"], registry=REGISTRY)

ANALYZER_WRITE_SECONDS = Histogram("podtax_analyzer_write_duration_seconds",
                                   "One DuckDB batch write, commit included.", buckets=_FAST, registry=REGISTRY)
ANALYZER_STORED = Counter("podtax_analyzer_events_stored", "Events committed to DuckDB.", registry=REGISTRY)


def exposition() -> tuple[bytes, str]:
    """The Prometheus text exposition of every metric, and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
