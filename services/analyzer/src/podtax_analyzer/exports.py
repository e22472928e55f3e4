"""Raw exports of a campaign as CSV or Parquet files, written by DuckDB's own COPY.

Tables: runs, metrics (of the campaign's runs), phases (when the database has per-object phase
latencies) and comparisons (the comparison table, as the API returns it). Served as one zip at
/api/campaigns/{c}/export.zip?format=csv|parquet; `podtax export` unpacks it into a folder.
"""

from __future__ import annotations

import io
import math
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Literal

import duckdb
from podtax.event_payloads import HIDDEN_CHARS

from podtax_analyzer.report_data import table_exists
from podtax_analyzer.report_models import CampaignReport

Format = Literal["csv", "parquet"]
FORMATS: tuple[str, ...] = ("csv", "parquet")
COMPARISON_COLUMNS = {
    "id": "VARCHAR", "campaign": "VARCHAR", "node": "VARCHAR", "test": "VARCHAR", "params": "VARCHAR",
    "metric": "VARCHAR", "unit": "VARCHAR", "higher_is_better": "BOOLEAN", "primary": "BOOLEAN",
    "n_host": "INTEGER", "n_pod": "INTEGER", "host_median": "DOUBLE", "pod_median": "DOUBLE",
    "host_modes": "VARCHAR", "pod_modes": "VARCHAR", "host_lower_bound": "BOOLEAN", "pod_lower_bound": "BOOLEAN",
    "host_tool_version": "VARCHAR", "pod_tool_version": "VARCHAR", "ratio": "DOUBLE", "ci_low": "DOUBLE",
    "ci_high": "DOUBLE", "ci_method": "VARCHAR", "hl_ratio": "DOUBLE", "hl_ci_low": "DOUBLE",
    "hl_ci_high": "DOUBLE", "p_value": "DOUBLE", "p_adjusted": "DOUBLE", "verdict": "VARCHAR",
    "direction": "VARCHAR", "change_pct": "DOUBLE", "flags": "VARCHAR[]", "sentence": "VARCHAR",
    # columns added later go last, so a sheet or script reading the file by position keeps reading the same ones
    "host_upper_bound": "BOOLEAN", "pod_upper_bound": "BOOLEAN", "descriptive": "BOOLEAN",
    # the same node name in two clusters is two cells; host_/pod_ are the baseline's and the candidate's columns,
    # which are kubernetes and nomad in a control-plane campaign: without these a row said neither
    "cluster": "VARCHAR", "baseline": "VARCHAR", "candidate": "VARCHAR",
}
_OPTIONS = {"csv": "(FORMAT csv, HEADER true)", "parquet": "(FORMAT parquet)"}


# A spreadsheet opening a CSV file runs a cell that starts with = + - @ (or a tab or carriage return before
# one) as a formula: a tool build an import manifest named `hdparm 9.65 (=cmd|' /C calc'!A0)` reached runs.csv
# as `=cmd|' /C calc'!A0`. Such text cells get a leading apostrophe, which spreadsheets show as text.
FORMULA_START = r"^[=+\-@\t\r]"


def finite(v: Any) -> Any:
    """`v`, or None for a float that is not finite, as the API's JSON writes it (null): medians of values near
    the float maximum overflow to inf, which comparisons.csv wrote as `inf` beside the JSON's null."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _unhidden(column: str) -> str:
    """SQL: the text of `column` with its direction and zero-width characters written as `\\uNNNN`, as
    event_payloads.unhidden does (a U+202E in a stored node name made it read as another node's in a spreadsheet)."""
    text = f'"{column}"'
    for char in HIDDEN_CHARS:
        text = f"replace({text}, '{char}', '\\u{ord(char):04x}')"
    # strlen (bytes) = length (characters): ASCII only, no regular expression to run (most text)
    return (f"""CASE WHEN strlen("{column}") <> length("{column}") """
            f"""AND regexp_matches("{column}", '[{HIDDEN_CHARS}]') THEN {text} ELSE "{column}" END""")


def _as_text(con: duckdb.DuckDBPyConnection, query: str, params: list) -> str:
    """`query` with the direction and zero-width characters of its VARCHAR columns written as text (_unhidden),
    and their formula-like values prefixed with an apostrophe."""
    described = con.execute(f"SELECT * FROM ({query}) LIMIT 0", params).description
    names = [name for name, kind, *_ in described if str(kind) == "VARCHAR"]
    if not names:
        return query
    shown = ", ".join(f'{_unhidden(name)} AS "{name}"' for name in names)
    guarded = ", ".join(f"""CASE WHEN regexp_matches("{name}", '{FORMULA_START}') THEN '''' || "{name}" """
                        f'ELSE "{name}" END AS "{name}"' for name in names)
    return f"SELECT * REPLACE ({guarded}) FROM (SELECT * REPLACE ({shown}) FROM ({query}))"


def _copy(con: duckdb.DuckDBPyConnection, query: str, params: list, path: Path, fmt: Format) -> None:
    if fmt == "csv":  # Parquet keeps its types, and the text as it is
        query = _as_text(con, query, params)
    con.execute(f"COPY ({query}) TO '{path.as_posix()}' {_OPTIONS[fmt]}", params)


def write_exports(con: duckdb.DuckDBPyConnection, report: CampaignReport, folder: Path, fmt: Format) -> list[Path]:
    """Write runs, metrics, phases (if stored) and comparisons of ``report.campaign`` into ``folder``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use csv or parquet")
    folder.mkdir(parents=True, exist_ok=True)
    if "'" in folder.as_posix():
        raise ValueError("the export folder's path must not contain a quote")
    campaign = report.campaign
    out = []
    tables = [("runs", "SELECT * FROM runs WHERE campaign = $1 ORDER BY started_at NULLS LAST, run_id"),
              ("metrics", "SELECT m.* FROM metrics m JOIN runs r ON r.run_id = m.run_id WHERE r.campaign = $1 "
                          "ORDER BY m.run_id, m.name")]
    if table_exists(con, "phases"):
        tables.append(("phases", "SELECT p.* FROM phases p JOIN runs r ON r.run_id = p.run_id "
                                 "WHERE r.campaign = $1"))
    for name, query in tables:
        path = folder / f"{name}.{fmt}"
        _copy(con, query, [campaign], path, fmt)
        out.append(path)
    mem = duckdb.connect()
    try:
        cols = ", ".join(f'"{c}" {t}' for c, t in COMPARISON_COLUMNS.items())
        mem.execute(f"CREATE TABLE comparisons ({cols})")
        rows = [[finite(getattr(c, k)) for k in COMPARISON_COLUMNS] for c in report.cells]
        if rows:
            mem.executemany(f"INSERT INTO comparisons VALUES ({', '.join('?' * len(COMPARISON_COLUMNS))})", rows)
        path = folder / f"comparisons.{fmt}"
        _copy(mem, "SELECT * FROM comparisons", [], path, fmt)
        out.append(path)
    finally:
        mem.close()
    return out


def export_zip(con: duckdb.DuckDBPyConnection, report: CampaignReport, fmt: Format) -> bytes:
    """The same files in one zip (flat: no folders inside)."""
    with tempfile.TemporaryDirectory(prefix="podtax-export-") as tmp:
        paths = write_exports(con, report, Path(tmp), fmt)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for p in paths:
                zf.write(p, arcname=p.name)
    return buf.getvalue()
