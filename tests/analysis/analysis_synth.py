"""Synthetic campaigns with a known truth, written into a real DuckDB file made from schema.sql."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from podtax import events

T0 = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
RUN_COLUMNS = {
    "run_id": "VARCHAR", "event_id": "VARCHAR", "campaign": "VARCHAR", "cluster": "VARCHAR",
    "node": "VARCHAR", "env": "VARCHAR", "test": "VARCHAR", "params": "JSON", "params_key": "VARCHAR",
    "attempt": "INTEGER", "sequence": "INTEGER", "status": "VARCHAR", "tool": "VARCHAR",
    "tool_version": "VARCHAR", "tool_build": "VARCHAR", "flags": "VARCHAR[]", "started_at": "TIMESTAMPTZ",
    "ended_at": "TIMESTAMPTZ", "cpu_limit": "DOUBLE", "nr_throttled": "BIGINT", "throttled_usec": "BIGINT",
    "stored_at": "TIMESTAMPTZ",
}


def schema_sql() -> str:
    """The analyzer's schema.sql, as shipped."""
    return (files("podtax_analyzer") / "schema.sql").read_text()


def open_db(path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path))
    con.execute(schema_sql())
    return con


@dataclass
class SideSpec:
    """One side of a cell: values in run order plus what the run rows should say."""

    values: np.ndarray
    tool_version: str = "1.0.20"
    tool_build: str | None = None
    nr_throttled: list[int | None] | None = None
    throttled_usec: list[int | None] | None = None
    cpu_limit: float | None = None
    flags: list[list[str]] | None = None


@dataclass
class CellSpec:
    node: str
    host: SideSpec
    pod: SideSpec
    test: str = "sysbench-cpu"
    params: dict = field(default_factory=lambda: {"threads": 4, "time": 10})
    metric: str = "events_per_sec"
    unit: str = "events/s"
    higher_is_better: bool = True
    tool: str = "sysbench"
    campaign: str = "synthetic"
    failed: int = 0
    cluster: str = "local"
    order: list[int] | None = None  # the run order, 0 a host run and 1 a pod run (None: a seeded random one)


def params_key(params: dict) -> str:
    return " ".join(f"{k}={params[k]}" for k in sorted(params))


def insert_cells(con: duckdb.DuckDBPyConnection, cells: list[CellSpec], *, seed: int = 0) -> None:
    """Insert every cell's runs, host and pod interleaved in a random order (seeded)."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {c: [] for c in RUN_COLUMNS}
    metrics: dict[str, list] = {"run_id": [], "name": [], "value": [], "unit": [], "hib": []}
    counter = 0
    for ci, cell in enumerate(cells):
        sides = [("host", cell.host), ("kubernetes", cell.pod)]
        labels = np.array([0] * len(cell.host.values) + [1] * len(cell.pod.values))
        # a random interleaving; the k-th run of a side keeps its place in that side's run order
        order = labels[rng.permutation(len(labels))] if cell.order is None else np.asarray(cell.order)
        seq = {w: np.flatnonzero(order == w) for w in (0, 1)}
        for which, (env, spec) in enumerate(sides):
            for k, v in enumerate(spec.values):
                t = int(seq[which][k])
                counter += 1
                run_id = f"{cell.campaign}-{ci}-{env[0]}-{k}"
                start = T0 + timedelta(hours=ci, seconds=30 * t)
                row = {
                    "run_id": run_id, "event_id": f"ev-{counter}", "campaign": cell.campaign, "cluster": cell.cluster,
                    "node": cell.node, "env": env, "test": cell.test, "params": json.dumps(cell.params),
                    "params_key": params_key(cell.params), "attempt": 1, "sequence": t, "status": "ok",
                    "tool": cell.tool, "tool_version": spec.tool_version, "tool_build": spec.tool_build,
                    "flags": spec.flags[k] if spec.flags else [], "started_at": start,
                    "ended_at": start + timedelta(seconds=10),
                    "cpu_limit": spec.cpu_limit,
                    "nr_throttled": spec.nr_throttled[k] if spec.nr_throttled else (0 if env != "host" else None),
                    "throttled_usec": spec.throttled_usec[k] if spec.throttled_usec else None,
                    "stored_at": start + timedelta(seconds=11),
                }
                for c in RUN_COLUMNS:
                    cols[c].append(row[c])
                for key, val in (("run_id", run_id), ("name", cell.metric), ("value", float(v)),
                                 ("unit", cell.unit), ("hib", cell.higher_is_better)):
                    metrics[key].append(val)
        for f in range(cell.failed):
            counter += 1
            row = dict(zip(RUN_COLUMNS, [None] * len(RUN_COLUMNS), strict=True))
            row.update(run_id=f"{cell.campaign}-{ci}-failed-{f}", event_id=f"ev-{counter}", campaign=cell.campaign,
                       cluster="local", node=cell.node, env="kubernetes", test=cell.test,
                       params=json.dumps(cell.params), params_key=params_key(cell.params), attempt=1,
                       sequence=10_000 + f, status="failed", flags=[], stored_at=T0)
            for c in RUN_COLUMNS:
                cols[c].append(row[c])
    names = list(RUN_COLUMNS)
    select = ", ".join(f"unnest(${i + 1})::{RUN_COLUMNS[n]}" for i, n in enumerate(names))
    con.execute(f"INSERT INTO runs ({', '.join(names)}) SELECT {select}", [cols[n] for n in names])
    con.execute("INSERT INTO metrics SELECT unnest($1), unnest($2), unnest($3)::DOUBLE, unnest($4), unnest($5)",
                [metrics["run_id"], metrics["name"], metrics["value"], metrics["unit"], metrics["hib"]])


def one_cell(con: duckdb.DuckDBPyConnection, host: list[float], pod: list[float], higher_is_better: bool = True) -> Any:
    """The CellComparison of one cell on node-a with these host and pod values, stored in `con` and compared."""
    from podtax_analyzer.comparisons import compare_campaign

    spec = CellSpec("node-a", SideSpec(np.asarray(host, float)), SideSpec(np.asarray(pod, float)),
                    higher_is_better=higher_is_better, unit="events/s" if higher_is_better else "ms")
    insert_cells(con, [spec])
    (c,) = compare_campaign(con, "synthetic").cells
    return c


def lognormal(rng: np.random.Generator, median: float, cv: float, n: int) -> np.ndarray:
    """n values with the given median and roughly the given coefficient of variation."""
    return median * np.exp(rng.normal(0.0, cv, n))


def fixture_campaign(campaign: str = "synthetic", seed: int = 42) -> list[CellSpec]:
    """A fixed campaign with one cell per situation the analysis must recognise (known truth)."""
    rng = np.random.default_rng(seed)

    def ln(median: float, n: int, cv: float = 0.01) -> np.ndarray:
        return lognormal(rng, median, cv, n)

    drifting = ln(1000, 24)
    drifting[12:] *= 0.94
    with_outliers = ln(1000, 20)
    with_outliers[[3, 11]] = [700.0, 1400.0]
    bimodal_host = rng.permutation(np.concatenate([ln(130, 77, 0.02), ln(238, 83, 0.02)]))
    disk = dict(test="hdparm", params={"mode": "disk", "device": "/dev/sda"}, metric="read_mb_per_second",
                unit="MB/s", tool="hdparm")
    short_flags = [[]] * 18 + [["SHORT: sysbench ran 6.1 s of the requested 10 s"]] * 2
    cells = [
        CellSpec("node-a", SideSpec(ln(1000, 20)), SideSpec(ln(970, 20))),  # true 3% slower
        CellSpec("node-b", SideSpec(ln(1000, 20)), SideSpec(ln(1000, 20))),  # no difference
        CellSpec("node-c", SideSpec(ln(400, 20), tool_version="1.0.18"), SideSpec(ln(1000, 20))),  # confounded
        CellSpec("node-d", SideSpec(ln(1000, 4)), SideSpec(ln(970, 12))),  # insufficient host
        CellSpec("node-e", SideSpec(ln(1000, 13)), SideSpec(ln(700, 96), cpu_limit=1.0, nr_throttled=[40] * 96,
                                                            throttled_usec=[2_500_000] * 96)),  # throttled
        CellSpec("node-f", SideSpec(drifting), SideSpec(ln(1000, 24))),  # drift on the host side
        CellSpec("node-g", SideSpec(with_outliers), SideSpec(ln(1000, 20))),  # two outliers
        CellSpec("node-h", SideSpec(ln(1000, 20), flags=short_flags), SideSpec(ln(975, 20))),  # SHORT
        CellSpec("node-a", SideSpec(bimodal_host), SideSpec(ln(238, 40, 0.02)), **disk),  # two modes
        CellSpec("node-b", SideSpec(ln(240, 20, 0.02)), SideSpec(ln(236, 20, 0.02)), **disk),
    ]
    for c in cells:
        c.campaign = campaign
    cells[1].failed = 2
    return cells


def result_event(run_id: str, campaign: str, node: str, env: str, value: float, start: datetime, *,
                 test: str = "sysbench-cpu", params: dict | None = None, metric: str = "events_per_second",
                 unit: str = "events/s", higher_is_better: bool = True, tool: str = "sysbench",
                 tool_version: str = "1.0.20"):
    """One stored-result event of one metric, 10 s long from `start`, as the parser publishes it."""
    return metrics_event(run_id, campaign, node, env, start, [(metric, value, unit, higher_is_better)], test=test,
                         params=params, tool=tool, tool_version=tool_version)


def metrics_event(run_id: str, campaign: str, node: str, env: str, start: datetime,
                  metrics: list[tuple[str, float, str, bool]], *, test: str = "sysbench-cpu",
                  params: dict | None = None, tool: str = "sysbench", tool_version: str = "1.0.20",
                  seconds: float = 10.0):
    """One stored-result event of several metrics (name, value, unit, higher is better), ``seconds`` long from
    `start`, as the parser publishes it."""
    run = events.RunSpec(run_id=run_id, campaign=campaign, node=node, env=env, test=test,
                         params={"threads": 1} if params is None else params, cluster="local", attempt=1,
                         timeout_s=600)
    res = events.Result(run=run, tool=tool, tool_version=tool_version, parser_version="1",
                        metrics=[events.Metric(name=name, value=float(value), unit=unit, higher_is_better=hib)
                                 for name, value, unit, hib in metrics],
                        started_at=start, ended_at=start + timedelta(seconds=seconds))
    return events.result(res, "test")


def sysbench_results(campaign: str, host: list[float], pod: list[float], *, node: str = "node-1",
                     tool_version: str = "1.0.20", run_prefix: str | None = None, t0: datetime = T0,
                     checked: bool = True) -> list[events.Envelope]:
    """Result events of a sysbench-cpu cell (events_per_second), host runs then pod runs, 2 minutes apart.
    ``checked=False`` builds the runs unchecked (model_construct), as a store written before names on the
    bus were checked may hold them."""
    out: list[events.Envelope] = []
    for i, (env, value) in enumerate([("host", v) for v in host] + [("kubernetes", v) for v in pod]):
        fields = dict(run_id=f"{run_prefix or campaign}-{i}", campaign=campaign, node=node, env=env,
                      test="sysbench-cpu", params={"threads": 1}, cluster="local", attempt=1, timeout_s=600)
        run = events.RunSpec(**fields) if checked else events.RunSpec.model_construct(**fields, sequence=0)
        start = t0 + timedelta(minutes=2 * i)
        res = events.Result(run=run, tool="sysbench", tool_version=tool_version, parser_version="1",
                            metrics=[events.Metric(name="events_per_second", value=value, unit="events/s",
                                                   higher_is_better=True)],
                            started_at=start, ended_at=start + timedelta(seconds=10))
        out.append(events.result(res, "test"))
    return out
