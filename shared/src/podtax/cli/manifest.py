"""The manifest of `podtax import`: a CSV file, one row per log, every row checked before anything is read.

A row names a log (relative to the manifest's folder, and inside it or --root), the node (kept in lowercase, as
Kubernetes names nodes: `Node-1` and `node-1` are one node), the environment,
the template and the parameters its run used (`k=v` text), when it started and, optionally, the tool's
version. read_manifest returns the rows, or raises ManifestError listing every bad line with its fix.
Each log is only stat'ed here (present, a regular file, under the cap); podtax.cli.importer reads them.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from sys import intern
from typing import Any

from podtax import events, parsers, templates
from podtax.safefiles import MAX_LOG_BYTES, UnsafePath, read_capped, real_path, resolve_inside_stat

HEADER = ("file", "node", "env", "test", "params", "started_at", "tool_version")
MAX_MANIFEST_BYTES = 50_000_000
_NODE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?$")
# What a row's `test` may be: a registered template with a log parser (also what `podtax import --help` lists).
IMPORTABLE: tuple[str, ...] = tuple(name for name in templates.REGISTRY if name in parsers.TEST_TOOL)
USUAL_ENVS = ("host", "kubernetes")


def environments(test: str) -> tuple[str, ...]:
    """The `env` values a row of `test` may have: its template's (kubernetes or nomad for volume-churn)."""
    template = templates.REGISTRY.get(test)
    return template.environments if template else USUAL_ENVS


def accepted() -> str:
    """The `env` and `test` a row may have, as `podtax import --help` says it."""
    others = "; ".join(f"{name}: {' or '.join(envs)}" for name in IMPORTABLE
                       if (envs := environments(name)) != USUAL_ENVS)
    return (f"`env` is {' or '.join(USUAL_ENVS)}" + (f" ({others})" if others else "")
            + f"; `test` a template name ({', '.join(IMPORTABLE)})")


class ManifestError(Exception):
    """The manifest cannot be imported; `problems` are `line N: what is wrong and how to fix it`."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)  # slots: a manifest can hold 100,000s of rows
class Row:
    line: int
    file: str
    path: str  # the real path, checked inside the root (a str: a Path per row held ~300 bytes more)
    node: str
    env: str
    test: str
    params: dict[str, Any]
    started_at: datetime
    tool_version: str | None
    spelled: str | None = None  # the node as the manifest writes it, when that is not `node` (lowercase)


def parse_time(text: str) -> datetime:
    """ISO 8601; a time without a timezone is taken as UTC."""
    value = datetime.fromisoformat(text.strip())
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


ParamsCache = dict[tuple[str, str], tuple[dict[str, Any] | None, list[str]]]


def _check_row(fields: dict[str, str], base: Path, root: Path, line: int = 0,
               params_cache: ParamsCache | None = None) -> tuple[Row | None, list[str]]:
    problems: list[str] = []
    file = fields["file"].strip()
    path = ""
    if not file:
        problems.append("file is empty: give the log's path, relative to the manifest")
    else:
        try:  # inside the manifest's folder (or --root), a regular file; the cap is checked again on reading
            real, st = resolve_inside_stat(root, file, base)
            path = str(real)
            if (size := st.st_size) > MAX_LOG_BYTES:
                problems.append(f"file {file} is {size:,} bytes, above the {MAX_LOG_BYTES:,}-byte "
                                "output cap; cut it to the benchmark's own output")
        except UnsafePath as exc:
            problems.append(f"file {exc}")
    given = fields["node"].strip()
    if not _NODE.match(given):
        problems.append(f"node {given!r} is not a node name (letters, digits, '-', '_', '.')")
    node = given.lower()  # as Kubernetes names nodes (host names ignore case): Node-1 and node-1 are one node
    env = fields["env"].strip()
    template = templates.REGISTRY.get(fields["test"].strip())
    allowed = environments(fields["test"].strip())
    if env not in allowed:
        problems.append(f"env {env!r} must be {' or '.join(allowed)}"
                        + (f" for {template.name}" if template and template.control_plane else ""))
    test = fields["test"].strip()
    key = (test, fields["params"])
    if params_cache is None or key not in params_cache:  # rows repeat the same test and params text
        params_problems: list[str] = []
        checked = (_check_params(test, fields["params"], params_problems), params_problems)
        if params_cache is not None:
            params_cache[key] = checked
    else:
        checked = params_cache[key]
    params = checked[0]  # shared by the rows with the same text: never changed (RunSpec copies it)
    problems += checked[1]
    started: datetime | None = None
    try:
        started = parse_time(fields["started_at"])
    except ValueError:
        problems.append(f"started_at {fields['started_at']!r} is not an ISO 8601 time "
                        "(e.g. 2024-03-01T14:05:00Z)")
    else:  # what a raw-log event takes (and a time whose run end still fits a datetime)
        if not events.EARLIEST <= started <= datetime.now(UTC) + events.MAX_AHEAD:
            problems.append(f"started_at {fields['started_at']!r} is before 2000 or in the future: not the time "
                            "of a recorded run")
            started = None
    if problems or started is None or params is None:
        return None, problems
    version = fields.get("tool_version", "").strip() or None
    # node, env, test and version repeat from row to row: one string each, not one per row
    return Row(line, file, path, intern(node), intern(env), intern(test), params, started,
               intern(version) if version else None, intern(given) if given != node else None), []


def _check_params(test: str, text: str, problems: list[str]) -> dict[str, Any] | None:
    try:
        template = templates.get(test)
    except templates.TemplateError as exc:
        problems.append(exc.detail)
        return None
    if test not in IMPORTABLE:
        problems.append(f"test {test} has no log parser, so its logs cannot be imported")
        return None
    try:
        params: dict[str, Any] = dict(templates.parse_params(text))
        checked = template.validate(params)
    except ValueError as exc:  # TemplateError is a ValueError too
        problems.append(f"params: {getattr(exc, 'detail', exc)}")
        return None
    # each value as the template reads it, as a campaign's runs store it: `reverse=yes` -> true, `bs=4k` -> 4K
    # (fio reads both alike), so two spellings of one setting make one cell
    for key in params:
        if isinstance(value := getattr(checked, key, None), bool | str):
            params[key] = value
    if params.get("threads") == "all":
        problems.append("params: threads=all cannot be imported: give the number of threads the run used")
        return None
    return params


def _rows(reader: Any) -> Iterator[list[str]]:
    """The reader's rows; a line the csv module cannot read (a field over its limit, mostly after a quote
    left open) becomes a ManifestError naming the line."""
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ManifestError([f"line {reader.line_num}: {exc}: is a quote (\") left open?"]) from None
        yield values


def _lines(text: str) -> Iterator[str]:
    """The text's lines one at a time, each with its end (csv reads CRLF and LF): a list of them all
    would hold a 50 MB manifest twice. Old Mac line ends (CR alone) become LF first."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    start, size = 0, len(text)
    while start < size:
        end = text.find("\n", start) + 1 or size
        yield text[start:end]
        start = end


def read_manifest(manifest: Path, root: Path | None = None) -> list[Row]:
    """Every row of the manifest, checked; raises ManifestError listing every bad row. Files are
    relative to the manifest's folder and must lie inside `root` (default: that folder)."""
    try:
        text = read_capped(real_path(manifest), MAX_MANIFEST_BYTES, str(manifest)).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError, UnsafePath) as exc:
        raise ManifestError([f"cannot read {manifest}: {exc}"]) from None
    reader = csv.reader(_lines(text))
    header = tuple(h.strip() for h in next(reader, []))
    if header not in (HEADER, HEADER[:-1]):
        raise ManifestError([f"line 1: the header must be `{','.join(HEADER)}` (found `{','.join(header)}`)"])
    rows: list[Row] = []
    problems: list[str] = []
    seen: dict[tuple[str, str, str], tuple[int, str]] = {}  # -> its first line and node as written there
    params_cache: ParamsCache = {}
    for values in _rows(reader):
        line = reader.line_num
        if not any(v.strip() for v in values):
            continue  # blank line
        if len(values) not in (len(HEADER), len(HEADER) - 1):
            problems.append(f"line {line}: {len(values)} columns, expected {len(HEADER)} ({','.join(HEADER)}); "
                            "quote params that contain commas")
            continue
        row, row_problems = _check_row(dict(zip(HEADER, values, strict=False)), manifest.parent,
                                       root or manifest.parent, line, params_cache)
        problems += [f"line {line}: {p}" for p in row_problems]
        if row is None:
            continue
        key = (row.path, row.node, row.env)  # row.path is already the real path
        if key in seen:
            first, spelled = seen[key]
            ours = row.spelled or row.node
            case = f"; node names ignore case: {spelled} is {ours}" if spelled != ours else ""
            problems.append(f"line {line}: duplicate of line {first} (same file, node and env{case}); "
                            "remove one of them")
            continue
        seen[key] = (line, row.spelled or row.node)
        rows.append(row)
    if problems:
        raise ManifestError(problems)
    if not rows:
        raise ManifestError([f"{manifest}: no rows below the header, nothing to import"])
    return rows
