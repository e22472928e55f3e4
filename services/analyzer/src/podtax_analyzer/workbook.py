"""The campaign as an Excel workbook (openpyxl), served at /api/campaigns/{c}/export.xlsx.

Sheets: "summary" (the test-by-node matrix of ratios, each cell filled with the HTML matrix's colour,
svgplot.heat_colour, so it follows the metric's direction, or hatched grey with the flags that withhold its
verdict; then the full comparison table with intervals, verdicts and flags, a BIMODAL side's modes as text and
as numbers: each mode's median and runs; the verdict worded as in the sentence, the HTML and the CLI table, the
API's `direction`: "fewer" errors, a "higher" lost_percent, never "faster" for a count or a level), one sheet per
node with every run's values for both sides, "provenance", and "phases" when the campaign has per-object
control-plane latencies (one row per object and phase, with its cell's node and params: a test's cells are never
pooled).
Numbers are stored as numbers; units are in the headers. A sheet holds at most ROW_LIMIT rows: a node's runs, the
phases or the summary's comparison table beyond go on in "node x (2)", "summary (2)"..., each with the header row
(the matrix shows the rows that leave room for the table's title and header, and says so). A node sheet's last
column names its node: a title is cut to 31 characters and made unique ("~2"), so it may read as another node's.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Iterable, Iterator
from datetime import UTC
from typing import Any

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet
from podtax.event_payloads import printable, printable_cut

from podtax_analyzer.exports import FORMULA_START, finite
from podtax_analyzer.report_data import ReportData, caveat, headline_cells, ratio_label, side_label, verdict_withheld
from podtax_analyzer.report_models import CellComparison, SideModes
from podtax_analyzer.svgplot import heat_colour

MATRIX_TITLE = "Ratio of medians (candidate/baseline) per test and node"
TABLE_TITLE = "Comparison table"
COMPARISON_HEADERS = ["node", "test", "params", "metric", "unit", "higher is better", "primary", "sides",
                      "n baseline (runs)", "n candidate (runs)", "baseline median (unit)", "candidate median (unit)",
                      "baseline modes (BIMODAL)", "candidate modes (BIMODAL)",
                      *(f"{side} mode {k} {what}" for side in ("baseline", "candidate") for k in (1, 2)
                        for what in ("median (unit)", "runs")),
                      "baseline median is a lower bound (LOWER_BOUND)",
                      "candidate median is a lower bound (LOWER_BOUND)",
                      "ratio", "CI low (95%)",
                      "CI high (95%)", "CI method", "p-value", "p adjusted", "change (%)",
                      "verdict", "flags", "flag details", "sentence", "caveat",
                      # columns added later go last, so a sheet reading the table by position reads the same ones
                      "baseline median is an upper bound (WATCH_GAP, RETRIED)",
                      "candidate median is an upper bound (WATCH_GAP, RETRIED)",
                      "descriptive, not tested (kube-burner's min/avg)",
                      "cluster"]  # the same node name in two clusters is two cells
PHASE_HEADERS = ["node", "test", "params", "environment", "phase", "latency (ms)", "caveat",
                 "lower bound (given up while waiting: took longer)",
                 "upper bound (seen after a dropped watch or holding a retry's wait: took less)"]
RUN_HEADERS = ["test", "params", "metric", "unit", "environment", "side", "run id", "started at (UTC)", "value",
               "node"]  # last (columns added later go last); a title is cut and made unique, so it can name another
BOLD = Font(bold=True)
FORMULA_LIKE = re.compile(FORMULA_START)  # as the CSV export guards its text cells
NO_VERDICT = ("BDBDBD", "F7F7F7")  # hatching and background of a matrix cell with no verdict
CELL_LIMIT = 32_767  # characters of a cell (Excel's specifications and limits)
ROW_LIMIT = 1_048_576  # rows of a sheet (the same)
COLUMN_LIMIT = 16_384  # columns of a sheet (the same)


def sheet_title(name: str, taken: set[str], part: str = "") -> str:
    """A valid, unique sheet title (at most 31 characters, none of []:*?/\\, no apostrophe first or last:
    Excel repairs such a file), cut where a cell is (printable_cut: never inside an escape such as `\\u202e`);
    `part` (" (2)") ends it, however long the name."""
    def fit(width: int) -> str:
        return (re.sub(r"[\[\]:*?/\\]", "_", printable_cut(name, width)).strip("'") or "sheet") + part

    width = 31 - len(part)
    title, k = fit(width), 2
    while title.lower() in taken:
        suffix = f"~{k}"
        title, k = fit(width - len(suffix)) + suffix, k + 1
    taken.add(title.lower())
    return title


def _naive(dt: Any) -> Any:
    """Excel has no time zones: datetimes are written in UTC without one."""
    if dt is None or dt.tzinfo is None:
        return dt
    return dt.astimezone(UTC).replace(tzinfo=None)


def _clean(v: Any) -> Any:
    """A string made printable (event_payloads.printable, as the terminal, the HTML page and the CSV files write it):
    its control characters as `\\xNN`, which XML 1.0 cannot hold (openpyxl raised IllegalCharacterError, and one
    forged name in a flag's sentence failed every workbook that mentions it), its direction and zero-width characters
    as `\\uNNNN` (event_payloads.HIDDEN: a U+202E made one node's name read as another's). One longer than a cell holds
    (CELL_LIMIT), once so written, is cut and says so: openpyxl cut it there without a word (cut before the escapes,
    six characters each, a cell held more than the limit); the cut never splits an escape (printable_cut)."""
    if not isinstance(v, str):
        return v
    shown = printable(v)
    if len(shown) > CELL_LIMIT:
        cut = f"… (cut: {len(shown):,} characters, a cell holds {CELL_LIMIT:,})"
        return printable_cut(v, CELL_LIMIT - len(cut)) + cut
    return shown


def _text(ws: Worksheet, v: Any) -> Any:
    """`v` cleaned, and a string starting as a formula (= + - @, a tab or carriage return first) as a text cell
    with the quote prefix: openpyxl would write "=..." as a formula, Excel turns "+..." into one when the cell is
    edited, and names, tool versions and kernels come from events (a forged node "=HYPERLINK(...)" must not run)."""
    v = _clean(v)
    return _no_formula(WriteOnlyCell(ws, value=v)) if isinstance(v, str) and FORMULA_LIKE.match(v) else v


def _no_formula(cell: Any) -> Any:
    if cell.data_type == "f":
        cell.data_type = "s"
    if isinstance(cell.value, str) and FORMULA_LIKE.match(cell.value):
        cell.quotePrefix = True  # stays text when edited in Excel
    return cell


def _append(ws: Worksheet, values: list[Any]) -> None:
    # a float that is not finite is an empty cell, as the JSON's null: openpyxl wrote a number cell with no value
    ws.append([_text(ws, finite(v)) for v in values])


def _bold(ws: Worksheet, values: list[Any], size: int | None = None) -> list[WriteOnlyCell]:
    out = []
    for v in values:
        cell = _no_formula(WriteOnlyCell(ws, value=_clean(v)))
        cell.font = Font(bold=True, size=size) if size else BOLD
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        out.append(cell)
    return out


def _no_verdict(c: CellComparison) -> str:
    """What a matrix cell with no verdict says beside its ratio (or in its place); "" when it has a verdict."""
    held = " ".join(verdict_withheld(c))
    if c.ratio is None:
        return f"withheld ({held})" if held else "no ratio"
    return f"verdict withheld ({held})" if held else ""


def _matrix_cell(ws: Worksheet, c: CellComparison) -> WriteOnlyCell:
    """A matrix cell: the ratio, filled with the HTML matrix's colour (blue: the candidate is better, vermillion:
    worse, in the metric's own direction; a fixed scale on the ratio painted a slower latency blue). A cell with
    no verdict is hatched grey whatever its ratio, which stays a number whose format says why (0.900 verdict
    withheld (INSUFFICIENT)): 0.900 in a verdict's colour read as a confirmed slowdown."""
    note = _no_verdict(c)
    cell = WriteOnlyCell(ws, value=note if c.ratio is None else c.ratio)
    if c.ratio is not None:
        cell.number_format = f'0.000" {note}"' if note else "0.000"
    cell.fill = (PatternFill("lightUp", fgColor=NO_VERDICT[0], bgColor=NO_VERDICT[1]) if note else
                 PatternFill("solid", fgColor=heat_colour(c.ratio, c.higher_is_better).lstrip("#").upper()))
    return cell


def _mode_figures(side: SideModes | None) -> list[float | int | None]:
    """A BIMODAL side's modes as numbers a spreadsheet can compute with, beside their text (modes_text): each
    mode's median and runs, low mode first; empty cells for a side with one mode."""
    if side is None or not side.bimodal or len(side.modes) != 2:
        return [None] * 4
    return [x for m in side.modes for x in (m.median, m.n)]


def _summary(ws: Worksheet, data: ReportData, column_limit: int = COLUMN_LIMIT,
             row_limit: int = ROW_LIMIT) -> Iterator[list[Any]]:
    """The matrix (its first column_limit - 4 nodes: openpyxl raised past column 18,278, a campaign of 18,300 nodes
    answered 500, and wrote columns past Excel's last, 16,384, without a word), then the comparison table as far as
    the sheet holds `row_limit` rows: returns the table's rows left, for "summary (2)"... (write_workbook). The
    matrix shows as many of its rows as leave room for the table's title, header and first row."""
    rep = data.report
    primary = headline_cells(rep.cells)
    every = sorted({data.where(c) for c in primary})
    nodes = every[:column_limit - 4]
    cut = (f" The matrix shows the first {len(nodes):,} of the {len(every):,} nodes (a sheet holds {column_limit:,} "
           f"columns); the table below and the node sheets hold them all." if len(nodes) < len(every) else "")
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in primary:
        rows.setdefault((c.test, c.params, c.metric), {})[data.where(c)] = c
    room = max(0, row_limit - 8)  # 4 rows above the matrix, then a blank, the table's title, header, first row
    if len(rows) > room:
        cut += (f" The matrix shows its first {room:,} of {len(rows):,} rows (a sheet holds {row_limit:,} rows); "
                "the table below holds them all.")
        rows = dict(list(rows.items())[:room])
    for col, width in zip("ABCD", (16, 28, 30, 16), strict=True):
        ws.column_dimensions[col].width = width
    width = max([14] + [len(_no_verdict(c)) + 8 for c in primary])  # a number too wide for its column shows ###
    for k in range(len(nodes)):
        ws.column_dimensions[get_column_letter(5 + k)].width = width
    ws.freeze_panes = "A5"
    ws.append(_bold(ws, [f"podtax campaign {rep.campaign}: {MATRIX_TITLE}"], size=13))
    ws.append([f"95% intervals; {rep.correction} correction; practical threshold {rep.threshold * 100:.1f}%. "
               f"Colours as in the HTML report, in each metric's direction: blue, the candidate is better; "
               f"vermillion, worse. Hatched grey: no verdict (the flags that withhold it are written in the cell; "
               f"see the table below). Empty: no runs on that node.{cut}"])
    ws.append([])
    ws.append(_bold(ws, ["test", "params", "metric", "ratio"] + nodes))
    for (test, params, metric), by_node in rows.items():
        any_cell = next(iter(by_node.values()))
        line: list[Any] = [test, data.params_label(test, params), f"{metric} ({any_cell.unit})",
                           ratio_label(data.envs(any_cell))]  # the params as labels show them; the table keeps all
        for node in nodes:
            c = by_node.get(node)
            line.append(None if c is None else _matrix_cell(ws, c))
        _append(ws, line)
    ws.append([])
    ws.append(_bold(ws, [TABLE_TITLE], size=13))
    ws.append(_bold(ws, COMPARISON_HEADERS))
    table = _comparison_rows(data)
    for _ in range(row_limit - 7 - len(rows)):
        row = next(table, None)
        if row is None:
            break
        _append(ws, row)
    return table


def _comparison_rows(data: ReportData) -> Iterator[list[Any]]:
    """The summary's comparison table, one row a cell under COMPARISON_HEADERS."""
    for c in data.report.cells:
        yield [c.node, c.test, c.params, c.metric, c.unit, c.higher_is_better, c.primary,
                     ratio_label(data.envs(c)), c.n_host, c.n_pod, c.host_median, c.pod_median, c.host_modes,
                     c.pod_modes, *_mode_figures(c.modes and c.modes.host), *_mode_figures(c.modes and c.modes.pod),
                     c.host_lower_bound, c.pod_lower_bound,
                     c.ratio, c.ci_low, c.ci_high, c.ci_method, c.p_value, c.p_adjusted, c.change_pct,
                     c.direction or c.verdict, " ".join(c.flags), " ".join(c.flag_details.values()), c.sentence,
                     caveat(c), c.host_upper_bound, c.pod_upper_bound, c.descriptive, c.cluster]


def _sheets(wb: Workbook, taken: set[str], name: str, headers: list[str], rows: Iterable[list[Any]],
            widths: tuple[int, ...] = (), row_limit: int = ROW_LIMIT, first: str = "", part: int = 1) -> None:
    """`rows` under `headers` in sheet `name`, going on in "name (2)", "name (3)"... each time a sheet holds
    `row_limit` rows: openpyxl wrote row 1,048,601 of a node of 1,048,600 runs without a word, past Excel's last
    row, so Excel called the file damaged and its repair dropped the rows beyond. Each sheet is closed once full
    (_done). `first`: the first sheet's title, taken already (sheet_title); else made from `name`. `part`: the first
    sheet's number (2: it goes on from sheet `name`, written already; no sheet at all when `rows` is empty)."""
    def start(part: str, ws: Worksheet | None = None) -> Worksheet:
        if ws is not None:
            _done(ws)
        ws = wb.create_sheet(first if part == "" and first else sheet_title(name, taken, part))
        ws.freeze_panes = "A2"
        for col, width in enumerate(widths, start=1):
            ws.column_dimensions[get_column_letter(col)].width = width
        ws.append(_bold(ws, headers))
        return ws

    rows = iter(rows)
    if part > 1:
        head = next(rows, None)
        if head is None:
            return
        rows = itertools.chain([head], rows)
    ws, held = start("" if part == 1 else f" ({part})"), 1
    for row in rows:
        if held >= row_limit:
            part += 1
            ws, held = start(f" ({part})", ws), 1
        _append(ws, row)
        held += 1
    _done(ws)


def _done(ws: Worksheet) -> None:
    """`ws` closed, its rows written: a write-only sheet holds its temporary file open until the workbook is saved,
    so a campaign of 300 nodes (a sheet each) under a limit of 256 open files (`ulimit -n`; many systems give a
    service 1,024) answered 500 ('[Errno 24] Too many open files'), and took the files other work needed."""
    ws.close()


def _node_rows(data: ReportData, node: str) -> Iterable[list[Any]]:
    for c in data.report.cells:
        if data.where(c) != node:
            continue
        pair = data.envs(c)
        for run in data.runs.get(c.id, []):
            # a datetime gets openpyxl's date-time number format by itself
            yield [c.test, c.params, c.metric, c.unit, run.env, side_label(run.env, pair), run.run_id,
                   _naive(run.started_at), run.value, node]


def write_workbook(data: ReportData, row_limit: int = ROW_LIMIT, column_limit: int = COLUMN_LIMIT) -> bytes:
    """The workbook as .xlsx bytes; a sheet holds at most `row_limit` rows (_sheets) and `column_limit` columns
    (_summary)."""
    wb = Workbook(write_only=True)  # streamed: several times faster for campaigns with many runs
    taken: set[str] = set()
    summary = wb.create_sheet(sheet_title("summary", taken))
    table = _summary(summary, data, column_limit, row_limit)
    _done(summary)
    _sheets(wb, taken, "summary", COMPARISON_HEADERS, table, row_limit=row_limit, part=2)  # rows past its limit
    nodes = sorted({data.where(c) for c in data.report.cells})
    # every node's first title taken before any part is named: a part ("node x (2)") never takes the title of a
    # node named "x (2)"; the node column says whose runs a sheet holds whatever its title
    firsts = {node: sheet_title(f"node {node}", taken) for node in nodes}
    for node in nodes:
        _sheets(wb, taken, f"node {node}", RUN_HEADERS, _node_rows(data, node),
                (14, 28, 24, 10, 12, 8, 26, 20, 14, 20), row_limit, firsts[node])
    prov = wb.create_sheet(sheet_title("provenance", taken))
    prov.append(_bold(prov, ["node", "environment", "runs", "tool builds", "kernel", "CPU", "OS", "arch",
                             "hw threads"]))
    for p in data.provenance:
        _append(prov, [p["node"], p["env"], p["runs"], "; ".join(p["tools"]), "; ".join(p["kernels"]),
                       "; ".join(p["cpus"]), p["os"], p["arch"], p["hw_threads"]])
    _done(prov)
    if data.phases:  # per cell (node, test, params), as the phase table: never a test's cells pooled
        _sheets(wb, taken, "phases", PHASE_HEADERS,
                ([data.place(row["cluster"], row["node"]), row["test"], row["params"], row["env"], row["phase"],
                  row["seconds"] * 1000.0, row["caveat"], row["lower_bound"], row["upper_bound"]]
                 for row in data.phases), row_limit=row_limit)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()
