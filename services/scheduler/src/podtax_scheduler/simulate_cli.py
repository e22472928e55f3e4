"""`podtax simulate`: evaluate placement policies on a campaign's measured speeds (podtax_scheduler.simulate).

It lives in the scheduler package (the policies are its plugins) and runs as `python -m
podtax_scheduler simulate ...`, which `podtax simulate` calls: the podtax library imports no service.

The campaign's pod-side values of each test's primary metric come from the analyzer's HTTP API,
or from a DuckDB file with ``--db``. The workload file (YAML) says what arrives::

    nodes: {cpu: "8", memory: 16Gi}   # allocatable of every simulated node
    copies: 2                         # simulated nodes per measured node (node-a-0, node-a-1, ...)
    duration_s: 1800                  # arrivals stop then; the simulation runs until every job ends
    contention: 0.05                  # each pod already running on a node slows a new one by 5%
    classes:
      - test: sysbench-cpu
        params: threads=1             # the campaign's group: a subset of its parameters
        rate_per_s: 0.2               # Poisson arrivals
        runtime_s: 120                # on a node of the fleet's median speed
        requests: {cpu: "1", memory: 512Mi}
        namespace: web                # optional (default sim); labels and affinity too: the pods' own
        labels: {app: web}
        affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels:
          {app: db}}, namespaceSelector: {matchLabels: {team: a}}, topologyKey: kubernetes.io/hostname}]}}
    namespaces: {db: {team: a}}       # optional: namespace -> labels, what a namespaceSelector reads
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from podtax import templates
from podtax.campaign_yaml import value_problem, yaml_problem
from podtax.cli.common import a_path, campaign_name, fail, not_a_database, wide_console
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.table import Table

POLICIES = ("default", "random", "prototype", "podtax")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClassSpec(_Strict):
    test: str
    params: str = ""
    rate_per_s: float = Field(gt=0, le=1000)
    runtime_s: float = Field(gt=0)
    requests: dict[str, str] = Field(default_factory=lambda: {"cpu": "1", "memory": "256Mi"})
    namespace: str = Field("sim", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    labels: dict[str, str] = Field(default_factory=dict)
    affinity: dict[str, Any] | None = None


class WorkloadSpec(_Strict):
    nodes: dict[str, str] = Field(default_factory=lambda: {"cpu": "8", "memory": "16Gi"})
    copies: int = Field(1, ge=1, le=1000)
    duration_s: float = Field(gt=0, le=30 * 86400)
    contention: float = Field(0.0, ge=0, le=10)
    classes: list[ClassSpec] = Field(min_length=1)
    namespaces: dict[str, dict[str, str]] = Field(default_factory=dict)


MAX_WORKLOAD_BYTES = 1024 * 1024  # a workload is a few kB of YAML; PyYAML took minutes over a 50 MB file


def read_workload(path: Path) -> WorkloadSpec:
    text = ""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_WORKLOAD_BYTES + 1)
        if len(data) > MAX_WORKLOAD_BYTES:
            raise fail(f"the workload {path} holds more than {MAX_WORKLOAD_BYTES:,} bytes: a workload is a few kB "
                       f"of YAML (see `podtax simulate --help`); give the workload file", 2)
        text = data.decode()
        raw = yaml.safe_load(text) or {}
        if not isinstance(raw, dict):  # pydantic's words named no field: ": Input should be a valid dictionary"
            raise fail(f"the workload {path} is not a YAML mapping: give duration_s and classes (see `podtax "
                       f"simulate --help`)", 2)
        return WorkloadSpec.model_validate(raw)
    except OSError as exc:
        raise fail(f"cannot read the workload {path} ({exc.strerror})", 2) from None
    except UnicodeDecodeError as exc:
        raise fail(f"the workload {path} is not UTF-8 text (byte {exc.start})", 2) from None
    except yaml.YAMLError as exc:  # one line, as a campaign file's (PyYAML's own message takes 5, with a caret)
        raise fail(f"the workload {yaml_problem(exc, text, str(path))}", 2) from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise fail(f"the workload {path} is invalid: {problems} (see `podtax simulate --help`)", 2) from None
    except ValueError as exc:  # YAML's int() past 4,300 digits or a date like 2024-13-01: a traceback
        raise fail(f"the workload {path}{value_problem(exc, text)}", 2) from None


def measured_from_cells(cells: list[dict[str, Any]], values_of: Any) -> list[Any]:
    """Group the campaign's primary-metric cells into Measured groups; values_of(cell) -> pod values."""
    from podtax_scheduler.simulate import Measured

    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for c in cells:
        if not templates.is_primary_metric(c["test"], c["params"], c["metric"]):
            continue
        g = groups.setdefault((c["test"], c["params"]), {"metric": c["metric"], "unit": c["unit"],
                                                         "hib": c["higher_is_better"], "values": {}})
        vals = values_of(c)
        if len(vals):
            g["values"][c["node"]] = vals
    return [Measured(test, params, g["metric"], g["unit"], g["hib"], g["values"])
            for (test, params), g in groups.items() if g["values"]]


def _from_db(db: Path, campaign: str) -> list[Any]:
    try:
        import duckdb
        from podtax_analyzer import duckcon
        from podtax_analyzer.celldata import load_cells
        from podtax_analyzer.db_file import foreign_why
    except ImportError:
        raise fail("--db needs the analyzer package: pip install -e services/analyzer", 2) from None
    if problem := not_a_database(db):
        raise fail(f"--db {db}: {problem}", 2)
    try:
        con = duckcon.connect(db, read_only=True)  # the analyzer's plan
    except duckdb.Error as exc:  # one the running analyzer holds
        raise fail(f"cannot open {db} ({exc}); if the analyzer is running it holds the file: drop --db to ask "
                   f"its HTTP API") from None
    try:
        cells = load_cells(con, campaign)
    except duckdb.Error as exc:
        if not (why := foreign_why(exc, con)):
            raise
        raise fail(f"--db {db}: {why[0]}", why[1]) from None
    finally:
        con.close()
    rows = [{"test": c.test, "params": c.params_key, "metric": c.metric, "unit": c.unit,
             "higher_is_better": c.higher_is_better, "node": c.node, "pod": c.pod.values} for c in cells]
    return measured_from_cells(rows, lambda c: c["pod"])


def _from_api(campaign: str) -> list[Any]:
    import numpy as np
    from podtax.cli.results import _get as api_get

    report = api_get(f"/api/campaigns/{campaign}/comparisons")
    assert isinstance(report, dict)

    def values(c: dict[str, Any]) -> Any:
        runs = api_get(f"/api/cells/{c['id']}")
        assert isinstance(runs, dict)
        return np.array([r["value"] for r in runs["runs"] if r["env"] == "kubernetes"])

    return measured_from_cells([c for c in report["cells"] if c.get("primary")], values)


def build_workload(spec: WorkloadSpec, measured: list[Any]) -> Any:
    from podtax_scheduler.model import PodInfo
    from podtax_scheduler.quantity import QuantityError, to_int
    from podtax_scheduler.scoring import params_match, params_of
    from podtax_scheduler.simulate import Job, JobClass, Workload, pod_object
    from podtax_scheduler.simulate_check import Refused, check_labels, check_namespace

    classes = []
    for i, c in enumerate(spec.classes):
        try:
            too_big = [r for r, q in c.requests.items() if to_int(r, q) > to_int(r, spec.nodes.get(r, "0"))]
        except QuantityError as exc:
            raise fail(f"classes.{i}.requests: {exc}", 2) from None
        if too_big:
            raise fail(f"classes.{i}.requests: {', '.join(too_big)} above a node's ({spec.nodes}); such pods "
                       f"would never run", 2)
        wanted = params_of(c.params) if c.params else {}
        if c.params and not wanted:
            raise fail(f"classes.{i}.params {c.params!r}: give space-separated key=value pairs", 2)
        found = [m for m in measured if m.test == c.test and params_match(wanted, m.params_key)]
        if not found:
            have = sorted({f"{m.test} [{m.params_key}]" for m in measured}) or ["nothing"]
            raise fail(f"classes.{i}: the campaign has no pod results of {c.test} [{c.params}]; it has: "
                       f"{', '.join(have)}", 2)
        group = max(found, key=lambda m: (params_of(m.params_key).keys() == wanted.keys(), len(m.values),
                                          -len(m.params_key)))
        cls = JobClass(f"{c.test} [{group.params_key}]", group, c.rate_per_s, c.runtime_s, c.requests, c.namespace,
                       c.labels, c.affinity)
        try:
            check_pods(i, c.labels, c.affinity)
            PodInfo.from_dict(pod_object(Job(0, i, 0.0, 0.5), cls))
        except Refused as exc:
            raise fail(f"the workload's {exc}", 2) from None
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise fail(f"classes.{i}: not a pod Kubernetes would take ({exc})", 2) from None
        classes.append(cls)
    for name, labels in spec.namespaces.items():
        try:
            check_namespace(name, f"namespaces.{name}")
            check_labels(labels, f"namespaces.{name}")
        except Refused as exc:
            raise fail(f"the workload's {exc}", 2) from None
    measured_nodes = sorted({n for c in classes for n in c.group.values})
    names = {f"{n}-{k}" if spec.copies > 1 else n: n for n in measured_nodes for k in range(spec.copies)}
    w = Workload(list(names), names, spec.nodes, spec.duration_s, spec.contention, classes, spec.namespaces)
    for i, cls in enumerate(classes):
        if not node_affinity_met(w, cls):
            shown = ", ".join(list(names)[:3]) + (", ..." if len(names) > 3 else "")
            raise fail(f"the workload's classes.{i}.affinity.nodeAffinity: no simulated node matches it (they carry "
                       f"only the label kubernetes.io/hostname and the field metadata.name: {shown}); select on "
                       f"those or drop it", 2)
    return w


def check_pods(i: int, labels: dict[str, str], affinity: Any) -> None:
    """A class's labels and affinity as the API server would check them (simulate_check.Refused)."""
    from podtax_scheduler.simulate_check import Refused, check_affinity, check_labels

    if "test" in labels:
        raise Refused(f"classes.{i}.labels.test: the pods' test label is the class's test; drop it from labels")
    check_labels(labels, f"classes.{i}.labels")
    if affinity is not None:
        check_affinity(affinity, f"classes.{i}.affinity")


def node_affinity_met(w: Any, cls: Any) -> bool:
    """Whether some simulated node passes the class's required node affinity."""
    from podtax_scheduler.filters import NodeAffinity
    from podtax_scheduler.model import NodeInfo, PodInfo
    from podtax_scheduler.simulate import Job, node_object, pod_object

    pod = PodInfo.from_dict(pod_object(Job(0, 0, 0.0, 0.5), cls))
    return any(NodeAffinity().filter(pod, NodeInfo.from_dict(node_object(n, w.capacity))) is None for n in w.nodes)


def _ci(v: list[float], fmt: str = "{:,.1f}") -> str:
    return f"{fmt.format(v[0])} [{fmt.format(v[1])}, {fmt.format(v[2])}]"


def simulate(
    campaign: Annotated[str, typer.Option(help="Campaign whose measured speeds drive the simulation.",
                                          callback=campaign_name)],
    workload: Annotated[Path, typer.Option(parser=a_path, metavar="<path>",
                                           help="Workload YAML: what arrives (the format is above).")],
    policies: Annotated[str, typer.Option(help=f"Comma-separated: {','.join(POLICIES)}.")] = ",".join(POLICIES),
    seeds: Annotated[int, typer.Option(min=2, max=1000, help="Seeds (independent repetitions).")] = 10,
    db: Annotated[Path | None, typer.Option("--db", parser=a_path, metavar="<path>",
                                            help="Read this DuckDB file instead of the API.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> int:
    """Simulate a cluster on the campaign's measured speeds and compare placement policies.

    The workload file (YAML) says what arrives. `nodes`: the allocatable of every simulated node
    (default {cpu: "8", memory: 16Gi}); `copies`: simulated nodes per measured node (default 1);
    `duration_s` (required): arrivals stop then, and the simulation runs until every job ends;
    `contention`: how much each pod already running on a node slows a new one (0.05 = 5%; default 0);
    `classes` (at least one): each with `test` (a template name), `params` (the campaign's group, a subset
    of its parameters such as "threads=1"), `rate_per_s` (Poisson arrivals), `runtime_s` (on a node of
    the fleet's median speed) and `requests` (default {cpu: "1", memory: 256Mi}), optionally `namespace`
    (default sim), `labels` and `affinity` (the pods' own, in Kubernetes' form); `namespaces`: each namespace's
    labels, which a pod affinity term's namespaceSelector reads as the live scheduler does. What the API server
    would refuse in those pods, and a nodeAffinity no simulated node meets, are refused; pods whose required pod
    affinity is never met are counted (unplaced) and left out of the figures.

    The podtax policy uses the scheduler's profile that PODTAX_SCHEDULER_PROFILE names (its weights and
    BenchmarkScore settings; the default profile when unset).
    """
    chosen = [p.strip() for p in policies.split(",") if p.strip()]
    bad = [p for p in chosen if p not in POLICIES]
    if bad or not chosen:
        raise typer.BadParameter(f"unknown {', '.join(bad) or 'empty list'}; use {','.join(POLICIES)}",
                                 param_hint="--policies")
    spec = read_workload(workload)
    from podtax.config import ConfigError

    from podtax_scheduler.profile import load_profile
    from podtax_scheduler.simulate import NothingPlaced, evaluate

    try:  # the podtax policy weighs and scores as the scheduler would with this profile
        profile = load_profile(Path(os.environ["PODTAX_SCHEDULER_PROFILE"]) if os.environ.get(
            "PODTAX_SCHEDULER_PROFILE") else None)
    except ConfigError as exc:
        raise fail(exc.message, 2) from None

    measured = _from_db(db, campaign) if db is not None else _from_api(campaign)
    if not measured:
        raise fail(f"campaign {campaign!r} has no pod-side results of a primary metric to simulate with", 2)
    w = build_workload(spec, measured)
    try:
        results = evaluate(w, chosen, list(range(seeds)), profile)
    except NothingPlaced as exc:
        raise fail(f"the workload {workload}: {exc}", 2) from None
    if as_json:
        print(json.dumps({"campaign": campaign, "nodes": len(w.nodes), "seeds": seeds, "policies": results},
                         indent=1))
        return 0
    table = Table(title=f"campaign {campaign}: {len(w.nodes)} nodes, {', '.join(c.name for c in w.classes)}; "
                        f"mean [95% CI] over {seeds} seeds")
    notes = unplaced_notes(results)
    for col in ("policy", "mean JCT s", "p95 JCT s", "makespan s", "jobs/h", "regret %", "JCT vs default",
                *(["unplaced"] if notes else [])):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for name, r in results.items():
        table.add_row(name, _ci(r["mean_jct_s"]), _ci(r["p95_jct_s"]), _ci(r["makespan_s"], "{:,.0f}"),
                      _ci(r["jobs_per_h"]), _ci(r["regret_pct"]),
                      _ci(r["jct_vs_default"], "{:.3f}") if "jct_vs_default" in r else "-",
                      *([_ci(r["unplaced"])] if notes else []))
    wide_console().print(table)
    for line in notes:
        print(line)
    return 0


def unplaced_notes(results: dict[str, dict[str, Any]]) -> list[str]:
    """One line per policy that left pods unplaced (a required pod affinity never met): its figures exclude them."""
    out = []
    for name, r in results.items():
        if r["unplaced"][0] > 0:
            classes = ", ".join(f"{c}: {n:g}" for c, n in r["unplaced_by_class"].items())
            out.append(f"{name} could not place {r['unplaced'][0]:g} pods a seed (mean; {classes}): their required "
                       f"affinity was never met; its figures exclude them")
    return out


app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command()(simulate)


def main(argv: list[str]) -> int:
    """`podtax simulate ...` (argv without `simulate`): one-line usage errors, exit 2."""
    from podtax.cli.main import run_app

    return run_app(app, argv, "podtax simulate")
