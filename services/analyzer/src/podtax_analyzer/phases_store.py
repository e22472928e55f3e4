"""Per-object phase latencies of control-plane runs (volume-churn, pod-startup), for distributions.

When the raw log of a control-plane run is stored, its timeline is read with the parser's own
functions and every (object, phase) latency becomes a row of the ``phases`` table, in the same
transaction. As in the parser's percentiles, an object given up while waiting adds a row for each phase it
was waiting in (that another object of the run completed) with ``lower_bound`` true: its latency is the time
until it was given up, and it took longer. A phase whose end a re-list saw after a dropped watch (the summary's
``watch_gaps``) has ``upper_bound`` true: it was timed when seen, the true time is shorter. A timeline the parser
refuses adds no row here (the parser service records why the run failed); the raw log itself is always kept.
Per-run metrics arrive as results, like any test's.
Rows are built column by column (a 10,000-object run is 60,000 rows).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import duckdb
import numpy as np
from podtax import events
from podtax.parsers import ParseFailure
from podtax.parsers import timeline as tl
from podtax.parsers.timeline_aborted import kept
from podtax.parsers.timeline_flags import upper_points
from podtax.phases import TEMPLATES
from podtax.provenance import split as split_provenance
from podtax.templates import params_key

RUN_COLUMNS = ("run_id", "campaign", "cluster", "node", "env", "backend", "test", "params_key")
COLUMNS = (*RUN_COLUMNS, "object", "phase", "start_s", "latency_s", "lower_bound", "upper_bound")
TYPES = ("varchar",) * 10 + ("double", "double", "boolean", "boolean")


@dataclass
class PhaseColumns:
    """One run's rows of the phases table: the run's own columns once, the per-row ones as lists."""

    run: dict[str, str]
    object: list[str] = field(default_factory=list)
    phase: list[str] = field(default_factory=list)
    start_s: list[float] = field(default_factory=list)
    latency_s: list[float] = field(default_factory=list)
    lower_bound: list[bool] = field(default_factory=list)
    upper_bound: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.object)

    def add(self, obj: str, phase: str, start_s: float, latency_s: float, lower_bound: bool) -> None:
        self.object.append(obj)
        self.phase.append(phase)
        self.start_s.append(start_s)
        self.latency_s.append(latency_s)
        self.lower_bound.append(lower_bound)
        self.upper_bound.append(False)


def phase_rows(log: events.RawLog) -> PhaseColumns | None:
    """The phases rows of one raw log; None for other tests or a timeline the parser refuses."""
    run = log.run
    if run.test not in TEMPLATES:
        return None
    try:
        timeline = kept(tl.read(split_provenance(log.stdout)[0]))  # deletes refused: without their phases
    except (ParseFailure, ValueError):
        return None
    if timeline.template != run.test:
        return None
    out = PhaseColumns({"run_id": run.run_id, "campaign": run.campaign, "cluster": run.cluster, "node": run.node,
                        "env": run.env, "backend": timeline.backend, "test": run.test,
                        "params_key": params_key(run.params)})
    seen: set[tuple[str, str]] = set()
    late = upper_points(timeline)  # seen after a dropped watch, or held by a retry
    for obj in timeline.objects:
        if obj.error is not None:  # its times end in its failure (as in the parser's latencies)
            continue
        t = obj.t
        for p in timeline.phases:
            if p.start in t and p.end in t and (obj.name, p.name) not in seen:
                seen.add((obj.name, p.name))
                out.object.append(obj.name)
                out.phase.append(p.name)
                out.start_s.append(t[p.start])
                out.latency_s.append(t[p.end] - t[p.start])
                if late:
                    out.upper_bound.append((obj.name, p.end) in late)
    out.upper_bound = out.upper_bound or [False] * len(out)
    out.lower_bound = [False] * len(out)
    done = set(out.phase)
    starts = {p.name: p.start for p in timeline.phases}
    times = {o.name: o.t for o in timeline.objects}
    for phase, pairs in tl.given_up_latencies(timeline).items():
        if phase in done:  # as the parser: only in a phase some object completed
            for name, seconds in pairs:
                out.add(name, phase, times[name][starts[phase]], seconds, True)
    return out


def insert_phases(con: duckdb.DuckDBPyConnection, runs: Iterable[PhaseColumns | None]) -> None:
    """Insert every run's rows in one statement; a redelivered raw log changes nothing (key run, object, phase)."""
    runs = [r for r in runs if r]
    if not runs:
        return
    counts = [len(r) for r in runs]
    columns: dict[str, np.ndarray] = {
        c: np.repeat(np.array([r.run[c] for r in runs], dtype=object), counts) for c in RUN_COLUMNS}
    columns["object"] = np.array([x for r in runs for x in r.object], dtype=object)
    columns["phase"] = np.array([x for r in runs for x in r.phase], dtype=object)
    columns["start_s"] = np.concatenate([np.asarray(r.start_s, dtype=float) for r in runs])
    columns["latency_s"] = np.concatenate([np.asarray(r.latency_s, dtype=float) for r in runs])
    columns["lower_bound"] = np.concatenate([np.asarray(r.lower_bound, dtype=bool) for r in runs])
    columns["upper_bound"] = np.concatenate([np.asarray(r.upper_bound, dtype=bool) for r in runs])
    con.register("batch_phases", columns)
    try:
        casts = ", ".join(f"CAST({c} AS {t})" for c, t in zip(COLUMNS, TYPES, strict=True))
        con.execute(f"INSERT INTO phases ({', '.join(COLUMNS)}) SELECT {casts} FROM batch_phases "
                    "ON CONFLICT DO NOTHING")
    finally:
        with contextlib.suppress(duckdb.Error):  # an aborted transaction refuses it; the INSERT's error counts
            con.unregister("batch_phases")
