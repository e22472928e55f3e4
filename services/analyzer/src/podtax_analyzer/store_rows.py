"""Rows of the analyzer's tables made from events: the runs, raw_logs, metrics, host_facts and placements
columns and their DuckDB types (schema.sql), in the order Store inserts them (one columnar INSERT per table per
batch: store.py). Pure functions.

Every time goes in UTC (events.utc; a time without a zone, which events.decode accepts, read as UTC): DuckDB refuses
a column mixing datetimes with and without a zone ('Could not convert datetime to TIMESTAMP WITH TIME ZONE', which
split the batch down to single events: 2,000 results alternating took 57.6 s instead of 0.5), and it reads a time
without one in its session's TimeZone, the machine's (a naive 03:04 stored as 21:34 UTC the day before in
Asia/Kolkata)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from podtax import events
from podtax.archfamily import emulated
from podtax.templates import params_key

RUN_COLUMNS = ("run_id", "event_id", "campaign", "cluster", "node", "env", "test", "params", "params_key",
               "attempt", "sequence", "status", "tool", "tool_version", "tool_build", "parser_version",
               "flags", "started_at", "ended_at", "qos_class", "cpu_limit", "nr_throttled", "throttled_usec",
               "image", "failure_stage", "failure_reason", "failure_detail", "stored_at", "tool_arch")
RUN_TYPES = ("varchar", "varchar", "varchar", "varchar", "varchar", "varchar", "varchar", "json", "varchar",
             "integer", "integer", "varchar", "varchar", "varchar", "varchar", "varchar", "varchar[]",
             "timestamptz", "timestamptz", "varchar", "double", "bigint", "bigint", "varchar", "varchar",
             "varchar", "varchar", "timestamptz", "varchar")
RAW_COLUMNS = ("run_id", "event_id", "campaign", "cluster", "node", "env", "test", "params", "params_key",
               "attempt", "started_at", "ended_at", "exit_code", "stdout", "stderr", "tool_version",
               "truncated", "timed_out", "provenance", "imported_from", "received_at")
RAW_TYPES = ("varchar", "varchar", "varchar", "varchar", "varchar", "varchar", "varchar", "json", "varchar",
             "integer", "timestamptz", "timestamptz", "integer", "varchar", "varchar", "varchar", "boolean",
             "boolean", "json", "varchar", "timestamptz")
METRIC_COLUMNS = ("run_id", "name", "value", "unit", "higher_is_better")
METRIC_TYPES = ("varchar", "varchar", "double", "varchar", "boolean")
FACT_COLUMNS = ("event_id", "cluster", "node", "seen_at", "kernel", "os", "cpu_model", "hw_threads", "arch",
                "tool_versions")
FACT_TYPES = ("varchar", "varchar", "varchar", "timestamptz", "varchar", "varchar", "varchar", "integer",
              "varchar", "json")
PLACEMENT_COLUMNS = ("event_id", "placed_at", "namespace", "pod", "pod_uid", "node", "test", "candidates",
                     "message")
PLACEMENT_TYPES = ("varchar", "timestamptz", "varchar", "varchar", "varchar", "varchar", "varchar", "json",
                   "varchar")


def _utc(t: datetime | None) -> datetime | None:
    return None if t is None else events.utc(t)


def _delta(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else max(0, after - before)

@functools.lru_cache(maxsize=4096)
def _params_columns(items: tuple[tuple[str, Any], ...], _types: tuple[type, ...]) -> tuple[str, str]:
    """(params as sorted JSON, params_key) of one parameter set: a campaign has few distinct sets and
    every run repeats one, so each is built once. The types are part of the cache key (True, 1 and 1.0
    are equal in Python, not in JSON); the same set in another key order is only another entry."""
    params = dict(items)
    return json.dumps(params, sort_keys=True), params_key(params)


def _run_base(run: events.RunSpec) -> dict[str, Any]:
    params, key = _params_columns(tuple(run.params.items()), tuple(map(type, run.params.values())))
    return {"run_id": run.run_id, "campaign": run.campaign, "cluster": run.cluster, "node": run.node,
            "env": run.env, "test": run.test, "params": params, "params_key": key, "attempt": run.attempt,
            "sequence": run.sequence}


def emulated_flag(p: events.Provenance, flags: list[str]) -> list[str]:
    """The run flag of a tool executable its kernel ran through an emulator (binfmt_misc and qemu-user: an x86_64
    sysbench on an arm64 node, 5-20x slow), from the provenance block's tool_arch and machine (`uname -m`); [] when
    native or unknown. A wrapper itself emulated (a whole amd64 image on an arm64 node) reads qemu's uname, the
    guest's: that run is not told."""
    if not emulated(p.tool_arch, p.machine) or any(f.startswith("EMULATED") for f in flags):
        return []
    return [f"EMULATED: the tool's executable is built for {p.tool_arch}, the kernel is {p.machine}: it ran through "
            "an emulator (binfmt_misc, qemu-user), so it measured the emulator, not the node; install the node's "
            "native build"]


def result_row(e: events.ResultV1, now: datetime) -> dict[str, Any]:
    r, p = e.data, e.data.provenance
    flags = list(r.flags) + emulated_flag(p, r.flags)
    return {**_run_base(r.run), "event_id": e.id, "status": "ok", "tool": r.tool, "tool_version": r.tool_version,
            "tool_build": r.tool_build, "parser_version": r.parser_version, "flags": flags,
            "started_at": events.utc(r.started_at), "ended_at": events.utc(r.ended_at), "qos_class": p.qos_class,
            "cpu_limit": p.cpu_limit, "nr_throttled": _delta(p.nr_throttled_before, p.nr_throttled_after),
            "throttled_usec": _delta(p.throttled_usec_before, p.throttled_usec_after), "image": p.image,
            "failure_stage": None, "failure_reason": None, "failure_detail": None, "stored_at": now,
            "tool_arch": p.tool_arch}


def failure_row(e: events.RunFailedV1, now: datetime) -> dict[str, Any]:
    f = e.data
    return {**_run_base(f.run), "event_id": e.id, "status": "failed", "tool": None, "tool_version": None,
            "tool_build": None, "parser_version": None, "flags": [], "started_at": _utc(f.started_at),
            "ended_at": _utc(f.ended_at), "qos_class": None, "cpu_limit": None, "nr_throttled": None,
            "throttled_usec": None, "image": None, "failure_stage": f.stage, "failure_reason": f.reason,
            "failure_detail": f.detail, "stored_at": now, "tool_arch": None}


def raw_row(e: events.RawLogV1, now: datetime) -> dict[str, Any]:
    log = e.data
    base = _run_base(log.run)
    base.pop("sequence")
    return {**base, "event_id": e.id, "started_at": events.utc(log.started_at), "ended_at": events.utc(log.ended_at),
            "exit_code": log.exit_code, "stdout": log.stdout, "stderr": log.stderr,
            "tool_version": log.tool_version, "truncated": log.truncated, "timed_out": log.timed_out,
            "provenance": log.provenance.model_dump_json(), "imported_from": log.imported_from, "received_at": now}


def metric_rows(results: Iterable[events.ResultV1]) -> list[dict[str, Any]]:
    """One row per run and metric name (a name a result repeats keeps its first value)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for e in results:
        run_id = e.data.run.run_id
        for m in e.data.metrics:
            rows.setdefault((run_id, m.name), {"run_id": run_id, "name": m.name, "value": m.value, "unit": m.unit,
                                               "higher_is_better": m.higher_is_better})
    return list(rows.values())


def fact_row(e: events.HostFactsV1) -> dict[str, Any]:
    d = e.data
    return {"event_id": e.id, "cluster": d.cluster, "node": d.node, "seen_at": events.utc(e.time), "kernel": d.kernel,
            "os": d.os, "cpu_model": d.cpu_model, "hw_threads": d.hw_threads, "arch": d.arch,
            "tool_versions": json.dumps(d.tool_versions)}


def placement_row(e: events.PlacementMadeV1) -> dict[str, Any]:
    d = e.data
    return {"event_id": e.id, "placed_at": events.utc(e.time), "namespace": d.namespace, "pod": d.pod,
            "pod_uid": d.pod_uid, "node": d.node, "test": d.test,
            "candidates": json.dumps([c.model_dump() for c in d.candidates]), "message": d.message}
