"""What the terminal report shows, before any rendering: which rows, which parameters, grouped notes.

By default only each test's primary metric is shown (``templates.REGISTRY[test].primary_metric``);
a (node, test, params) group whose cells include no primary metric (an unknown test, an unexpected
metric name) shows every metric, so nothing disappears silently. Parameters that are equal in every
cell of a test are printed once above its table; only the varying ones appear per row; the params read as the
report's labels (its params_labels: one empty in every cell and failed run of the test is left out).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from podtax import templates
from podtax.param_labels import label

Cell = dict[str, Any]


is_primary_metric = templates.is_primary_metric  # one definition, shared by the API and the CLI


def mark_primary(cells: list[Cell]) -> None:
    """Give every cell a boolean ``primary`` (an older analyzer API does not send it)."""
    for c in cells:
        if not isinstance(c.get("primary"), bool):
            c["primary"] = is_primary_metric(c["test"], c["params"], c["metric"])


def split_params(params: str) -> dict[str, str]:
    """'k=v k=v' -> {k: v}; a token without '=' is kept as a key with an empty value."""
    out: dict[str, str] = {}
    for token in params.split():
        key, _, value = token.partition("=")
        out[key] = value
    return out


def join_params(params: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


@dataclass
class Row:
    number: int  # 1-based position in the report's cells (the same with and without --all-metrics)
    cell: Cell
    varying: str  # the parameters that vary between the test's cells, e.g. "threads=2"


@dataclass
class TestView:
    test: str
    fixed: str  # parameters equal in every cell of the test, printed once
    rows: list[Row]
    hidden: list[Row] = field(default_factory=list)
    hidden_flags: dict[str, list[Row]] = field(default_factory=dict)  # flags seen only on hidden rows

    @property
    def metrics(self) -> list[str]:
        return list(dict.fromkeys(r.cell["metric"] for r in self.rows))


@dataclass
class ReportView:
    tests: list[TestView]
    nodes: list[str]
    all_metrics: bool

    @property
    def rows(self) -> list[Row]:
        return [r for t in self.tests for r in t.rows]

    @property
    def hidden(self) -> list[Row]:
        return [r for t in self.tests for r in t.hidden]

    @property
    def single_node(self) -> bool:
        return len(self.nodes) == 1

    def label(self, row: Row, *, metric: bool | None = None) -> str:
        """What distinguishes a row in text: node (if several), varying params, metric (if several)."""
        test = next(t for t in self.tests if row in t.rows or row in t.hidden)
        parts = [] if self.single_node else [row.cell["node"]]
        if len(self.tests) > 1:
            parts.append(test.test)
        if row.varying:
            parts.append(row.varying)
        if metric if metric is not None else len(test.metrics) > 1:
            parts.append(row.cell["metric"])
        return " ".join(parts)


def _params_split(labels: list[str]) -> tuple[dict[str, str], set[str]]:
    """The parameters equal in every cell (fixed) and the names of the others (varying), of the cells' params
    labels."""
    parsed = [split_params(label) for label in labels]
    keys = list(dict.fromkeys(k for p in parsed for k in p))
    fixed = {k: parsed[0][k] for k in keys if all(k in p and p[k] == parsed[0][k] for p in parsed)}
    return fixed, set(keys) - set(fixed)


def build_view(report: dict[str, Any], all_metrics: bool) -> ReportView:
    cells: list[Cell] = report["cells"]
    mark_primary(cells)
    with_primary = {(c["node"], c["test"], c["params"]) for c in cells if c["primary"]}
    by_test: dict[str, list[tuple[int, Cell]]] = {}
    for i, c in enumerate(cells, 1):
        by_test.setdefault(c["test"], []).append((i, c))
    labels = report.get("params_labels", {})  # computed once for every view of the report
    tests = []
    for test, numbered in by_test.items():
        fixed, varying = _params_split([label(labels, test, c["params"]) for _, c in numbered])
        view = TestView(test, join_params(fixed), [])
        for i, c in numbered:
            shown_params = split_params(label(labels, test, c["params"]))
            row = Row(i, c, join_params({k: v for k, v in shown_params.items() if k in varying}))
            shown = all_metrics or c["primary"] or (c["node"], c["test"], c["params"]) not in with_primary
            (view.rows if shown else view.hidden).append(row)
        shown_flags = {(r.cell["node"], r.cell["params"], f) for r in view.rows for f in r.cell["flags"]}
        for r in view.hidden:
            for f in r.cell["flags"]:
                if (r.cell["node"], r.cell["params"], f) not in shown_flags:
                    view.hidden_flags.setdefault(f, []).append(r)
        tests.append(view)
    return ReportView(tests, sorted({c["node"] for c in cells}), all_metrics)


def number_ranges(numbers: Iterable[int]) -> str:
    """[2, 3, 4, 9] -> '#2–4, #9'."""
    nums = sorted(set(numbers))
    parts: list[str] = []
    start = prev = None
    for n in [*nums, None]:
        if start is not None and (n is None or n != prev + 1):
            parts.append(f"#{start}" if start == prev else f"#{start}–{prev}")
            start = None
        if n is not None and start is None:
            start = n
        prev = n
    return ", ".join(parts)


def refs(view: ReportView, rows: list[Row], metric: bool | None = None) -> str:
    """Cell references grouped by what distinguishes them: '#2 (threads=1), #8–14 (threads=2)'.

    Metric names are named when `metric` is True, left out when False; None: for a lone row of a
    table with a metric column.
    """
    groups: dict[str, list[int]] = {}
    if metric is None and len(rows) > 1:
        metric = False
    for r in rows:
        groups.setdefault(view.label(r, metric=metric), []).append(r.number)
    return ", ".join(f"{number_ranges(nums)} ({label})" if label else number_ranges(nums)
                     for label, nums in groups.items())


def grouped_notes(rows: list[Row]) -> list[tuple[str, list[Row]]]:
    """Each distinct note once, with the rows it applies to, in order of first appearance."""
    notes: dict[str, list[Row]] = {}
    for r in rows:
        for w in r.cell.get("warnings", []):
            notes.setdefault(w, []).append(r)
    return list(notes.items())


def grouped_flags(rows: list[Row], order: Iterable[str]) -> list[tuple[str, list[tuple[str, list[Row]]]]]:
    """Each raised flag once, with its distinct per-cell sentences and the rows of each sentence."""
    raised: dict[str, dict[str, list[Row]]] = {}
    for r in rows:
        for name in r.cell["flags"]:
            detail = r.cell.get("flag_details", {}).get(name, "")
            raised.setdefault(name, {}).setdefault(detail, []).append(r)
    rank = {name: i for i, name in enumerate(order)}
    names = sorted(raised, key=lambda n: rank.get(n, len(rank)))
    return [(name, list(raised[name].items())) for name in names]


def shown_summary(report: dict[str, Any], view: ReportView) -> list[dict[str, Any]]:
    """Summary items about the displayed metrics (every item with --all-metrics)."""
    if view.all_metrics:
        return list(report["summary"])
    shown = {(r.cell["test"], r.cell["params"], r.cell["metric"]) for r in view.rows}
    return [s for s in report["summary"] if (s.get("test"), s.get("params"), s.get("metric")) in shown]
