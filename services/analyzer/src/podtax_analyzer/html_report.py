"""The campaign report as one self-contained HTML page (inline CSS and SVG, no script, no external
asset), served at /report/{campaign} and saved by `podtax report CAMPAIGN --html FILE`.

Sections: the test-by-node matrix (heatmap; ratio, interval, verdict and flags written in each cell,
each cell linking to its details), the cross-node summary, the campaign comparison (when asked),
per-cell distributions, runs over time per node, control-plane phase CDFs, placements, provenance,
every flag as a sentence, and the full table.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from html import escape
from typing import IO

import numpy as np
from podtax import phases as phase_defs
from podtax.event_payloads import printable
from podtax.flags import bound_mark
from podtax.parsers.timeline import rests_on_bound, rests_on_upper_bound

from podtax_analyzer.cell_modes import median_place
from podtax_analyzer.compare_models import CampaignChange
from podtax_analyzer.exports import spooled
from podtax_analyzer.flags import LEGEND
from podtax_analyzer.phase_table import phase_order
from podtax_analyzer.report_data import ReportData, caveat, headline_cells, ratio_label, side_label, verdict_withheld
from podtax_analyzer.report_models import CellComparison, SideModes
from podtax_analyzer.svgplot import cdf_plot, fmt, heat_colour, strip_plot, time_plot
from podtax_analyzer.wording import fmt_p

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1240px;
padding:12px 20px;color:#111;line-height:1.4}
h1{font-size:1.5em}h2{border-bottom:2px solid #0072B2;padding-bottom:2px;margin-top:2em}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #999;padding:4px 6px;vertical-align:top}
th{background:#f0f0f0;text-align:left}.scroll{overflow-x:auto;max-width:100%}
td.mcell{min-width:120px;text-align:center}td.mcell a{color:#111;text-decoration:none;display:block}
td.mcell a:hover,td.mcell a:focus{outline:2px solid #000}
.ratio{font-size:1.15em;font-weight:600}.ci{font-size:0.85em}.flag{font-weight:600;color:#5a2a82}
.verdict{font-size:0.85em;font-style:italic}.num{text-align:right;font-variant-numeric:tabular-nums}
.cell{border:1px solid #bbb;border-radius:4px;padding:6px 12px;margin:12px 0}
.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1px solid #999}
.note{color:#444;font-size:0.9em}svg{max-width:100%;height:auto}
.grid{display:flex;flex-wrap:wrap;gap:4px 24px}figure{margin:0}
"""
# The page runs no script and fetches nothing; the policy makes that hold even if an escape were missed (saved
# files too: it is in the page, not a header). Inline CSS and SVG, and the favicon's empty data: URL, are allowed.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
# a matrix cell with no verdict (a flag withholds it, or there is no ratio): hatched grey, never a verdict's colour
WITHHELD = "repeating-linear-gradient(135deg,#e0e0e0 0 5px,#f7f7f7 5px 10px)"


def _e(v: object) -> str:
    return escape("" if v is None else str(v))


def _num(v: float | None, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _key(data: ReportData, test: str, params: str) -> str:
    """A cell's test and params as its headings show them (ReportData.params_label)."""
    return " ".join(x for x in (test, data.params_label(test, params)) if x)


def _matrix(data: ReportData) -> str:
    cells = headline_cells(data.report.cells)
    nodes = sorted({data.where(c) for c in cells})
    rows: dict[tuple[str, str, str], dict[str, CellComparison]] = {}
    for c in cells:
        rows.setdefault((c.test, c.params, c.metric), {})[data.where(c)] = c
    head = "".join(f'<th scope="col">{_e(n)}</th>' for n in nodes)
    out = ['<div class="scroll"><table id="matrix"><thead><tr><th scope="col">test / parameters / metric</th>',
           head, "</tr></thead><tbody>"]
    for (test, params, metric), by_node in rows.items():
        any_cell = next(iter(by_node.values()))
        label = ratio_label(data.envs(any_cell))
        out.append(f'<tr><th scope="row">{_e(test)}<br><span class="note">{_e(data.params_label(test, params))}<br>'
                   f'{_e(metric)} '
                   f'({_e(any_cell.unit)}, {"higher" if any_cell.higher_is_better else "lower"} is better; '
                   f'{_e(label)})</span></th>')
        for node in nodes:
            c = by_node.get(node)
            if c is None:
                out.append('<td class="mcell empty">no runs</td>')
                continue
            flags = "".join(f'<div class="flag">⚑ {_e(f)}</div>' for f in c.flags)
            ci = f"[{_num(c.ci_low)}, {_num(c.ci_high)}]" if c.ci_low is not None else "no interval"
            ratio = _num(c.ratio) if c.ratio is not None else "withheld"
            held = verdict_withheld(c)
            word = c.direction or c.verdict  # "fewer" errors, not "faster"
            verdict = f"{word}: verdict withheld" if held else word
            bg = WITHHELD if held or c.ratio is None else heat_colour(c.ratio, c.higher_is_better)
            out.append(
                f'<td class="mcell{" withheld" if held else ""}" style="background:{bg}" '
                f'data-cell="{c.id}" data-node="{_e(node)}" data-test="{_e(test)}" data-metric="{_e(metric)}" '
                f'data-ratio="{"" if c.ratio is None else repr(c.ratio)}" data-flags="{_e(" ".join(c.flags))}">'
                f'<a href="#cell-{c.id}" title="{_e(c.sentence)}"><div class="ratio">{ratio}</div>'
                f'<div class="ci">{ci}</div><div class="verdict">{_e(verdict)}</div>{flags}</a></td>')
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _legend(threshold: float) -> str:
    return (f'<p class="legend"><span style="background:{heat_colour(1.08, True)}">candidate better</span>'
            f'<span style="background:#ffffff">within noise</span>'
            f'<span style="background:{heat_colour(0.92, True)}">candidate worse</span>'
            f'<span style="background:{WITHHELD}">verdict withheld</span> '
            f'Colour saturates at a 10% change, in each metric\'s direction; a cell whose verdict a flag withholds '
            f'(too few runs, drift, no ratio...) is hatched grey whatever its ratio. Every cell also states its '
            f'ratio, 95% interval, verdict and flags (⚑). Practical threshold: ±{threshold * 100:.1f}%.</p>')


def _centre(median: float | None, modes: str | None, side: SideModes | None, unit: str) -> str:
    """"median 130.2" (a count as a count: 5.5), or a BIMODAL side's two modes (CellComparison.host_modes) and
    where its median lies."""
    shown = "—" if median is None else fmt(median, unit)
    if modes:
        place = median_place(side, unit) if side else None
        return f"modes {modes} (median {shown}, {place})" if median is not None and place else f"modes {modes}"
    return f"median {shown}"


def _side_modes(c: CellComparison, env: str) -> SideModes | None:
    if c.modes is None:
        return None
    return c.modes.host if env == c.baseline else c.modes.pod


def _mode_medians(c: CellComparison, env: str) -> list[float]:
    """A BIMODAL side's mode medians (its plot draws a bar at each), else none."""
    side = _side_modes(c, env)
    if side is None or not side.bimodal:
        return []
    return [m.median for m in side.modes if m.median is not None]


def _cell_detail(data: ReportData, c: CellComparison) -> str:
    pair = data.envs(c)
    runs = data.runs.get(c.id, [])
    series = [(side_label(env, pair), [r.value for r in runs if r.env == env]) for env in pair if env]
    medians = ", ".join(f"{side_label(env, pair)} {_centre(m, modes, _side_modes(c, env), c.unit)}"
                        for env, m, modes in zip(pair, (c.host_median, c.pod_median), (c.host_modes, c.pod_modes),
                                                 strict=True) if env)
    medians += (f" {_e(c.unit)}; {ratio_label(pair)} {_num(c.ratio)} "
                f"(95% CI {_num(c.ci_low)} to {_num(c.ci_high)}, {_e(c.ci_method or 'no interval')})")
    flags = "".join(f"<li><b>{_e(k)}</b>: {_e(v)}</li>" for k, v in c.flag_details.items())
    warnings = "".join(f"<li>{_e(w)}</li>" for w in c.warnings)
    note = caveat(c)
    return (f'<div class="cell" id="cell-{c.id}" data-cell="{c.id}" data-n="{c.n_host + c.n_pod}">'
            f'<h3>{_e(data.where(c))} · {_e(_key(data, c.test, c.params))} · {_e(c.metric)}</h3>'
            f"<p>{_e(c.sentence)}</p><p class=\"note\">{medians}; verdict: <b>{_e(c.direction or c.verdict)}</b>.</p>"
            f"{strip_plot(series, c.unit, width=820, modes=[_mode_medians(c, env) for env in pair if env])}"
            + (f'<p class="caveat"><b>Caveat</b>: {_e(note)}.</p>' if note else "")
            + (f"<p>Flags:</p><ul>{flags}</ul>" if flags else "")
            + (f'<p class="note">Notes:</p><ul class="note">{warnings}</ul>' if warnings else "")
            + '<p class="note"><a href="#matrix">back to the matrix</a></p></div>')


def _timelines(data: ReportData) -> Iterator[str]:
    """The runs-over-time section in pieces, one a cell's plot (every run of it)."""
    cells = headline_cells(data.report.cells)
    first = True
    for node in sorted({data.where(c) for c in cells}):
        yield f'{"" if first else "</div>"}<h3 id="time-{_e(node)}">{_e(node)}</h3><div class="grid">'
        first = False
        for c in (c for c in cells if data.where(c) == node):
            pair = data.envs(c)
            runs = data.runs.get(c.id, [])
            series = [(side_label(env, pair), [(r.started_at, r.value) for r in runs if r.env == env])
                      for env in pair if env]
            yield (f'<figure><figcaption class="note">{_e(_key(data, c.test, c.params))} · {_e(c.metric)}'
                   f"</figcaption>{time_plot(series, c.unit)}</figure>")
    if not first:
        yield "</div>"


def _phase_key(where: str, test: str, params: str, phase: str) -> tuple[str, str, str, int]:
    """Cells in name order, each one's phases in the order of the contract's table."""
    names = phase_order(test)
    return where, test, params, names.index(phase) if phase in names else len(names)


def _phase_stats(env: str, values: list[float], bounds: list[float], late: list[float]) -> str:
    """"nomad: 120 objects, p50 310 ms, p99 ≥ 9,800 ms, min 12 ms, avg ≥ 590 ms; 6 given up: drawn at their given-up
    time (open circles)": a percentile (min the 0th) that rests on a given-up object's time (the parser's rule) is a
    lower bound, one that rests on a time seen after a dropped watch (``late``) an upper bound (the mirror); the mean
    holds every time, so it is a bound whenever there is one (kube-burner reports min and avg too)."""
    s = sorted(values)
    def mark(q: float) -> str:
        return bound_mark(bool(bounds) and rests_on_bound(s, q, min(bounds)),
                          bool(late) and rests_on_upper_bound(s, q, max(late)))
    figures = ", ".join(f"{label} {mark(q)}{fmt(float(np.percentile(s, q)))} ms"
                        for label, q in (("p50", 50.0), ("p99", 99.0), ("min", 0.0)))
    figures += f", avg {bound_mark(bool(bounds), bool(late))}{fmt(float(np.mean(s)))} ms"
    given = (f"; {len(bounds)} given up while waiting: drawn at their given-up time (open circles), they took "
             f"longer" if bounds else "")
    given += (f"; {len(late)} seen only by a re-list after a dropped watch or holding a retry's wait: drawn when "
              f"seen (open squares), they took less" if late else "")
    return f"{_e(env)}: {len(s)} objects, {figures}{given}"


def _phases(data: ReportData) -> str:
    control = any(c.test in ("volume-churn", "pod-startup") for c in data.report.cells)
    if not data.phases:
        return ("<p>No per-object phase latencies are stored for this campaign"
                + (" (the cells above show the per-run phase metrics)." if control else ".") + "</p>")
    named = sorted({(r["test"], r["phase"]) for r in data.phases})
    defs = "".join(f"<tr><td>{_e(t)}</td><td>{_e(p)}</td><td>{_e(phase_defs.definition(t, p))}</td></tr>"
                   for t, p in named)
    out = ['<table id="phase-definitions"><thead><tr><th>test</th><th>phase</th><th>definition</th></tr></thead>'
           "<tbody>", defs, "</tbody></table>"]
    # per cell (node, test, params) as the phase table: pooling a test's cells gives a median of none of them
    groups: dict[tuple[str, str, str, str], dict[str, list[float]]] = {}
    given_up: dict[tuple[str, str, str, str], dict[str, list[float]]] = {}  # lower bounds: took longer
    late: dict[tuple[str, str, str, str], dict[str, list[float]]] = {}  # upper bounds (WATCH_GAP): took less
    caveats: dict[tuple[str, str, str, str], str | None] = {}
    for r in data.phases:
        key = (data.place(r["cluster"], r["node"]), r["test"], r["params"], r["phase"])
        groups.setdefault(key, {}).setdefault(r["env"], []).append(r["seconds"] * 1000.0)
        if r["lower_bound"]:
            given_up.setdefault(key, {}).setdefault(r["env"], []).append(r["seconds"] * 1000.0)
        if r["upper_bound"]:
            late.setdefault(key, {}).setdefault(r["env"], []).append(r["seconds"] * 1000.0)
        caveats[key] = r["caveat"]  # the same for every row of a cell's phase
    for (where, test, params, phase), by_env in sorted(groups.items(), key=lambda kv: _phase_key(*kv[0])):
        out.append(f'<h3 class="phase-cell">{_e(where)} · {_e(_key(data, test, params))} · {_e(phase)}</h3>')
        bounds, seen = given_up.get((where, test, params, phase), {}), late.get((where, test, params, phase), {})
        out.append(cdf_plot(sorted(by_env.items()), "ms", bounds=bounds, late=seen))
        stats = "; ".join(_phase_stats(env, v, bounds.get(env, []), seen.get(env, []))
                          for env, v in sorted(by_env.items()))
        out.append(f'<p class="note phase-stats">{stats}.</p>')
        note = caveats[(where, test, params, phase)]
        out.append(f'<p class="caveat"><b>Caveat</b>: {_e(note)}.</p>' if note else "")
        for env in ("kubernetes", "nomad") if test == "volume-churn" else ():
            reason = phase_defs.absent_reason(test, env, phase) if env not in by_env else None
            if reason:
                out.append(f'<p class="note">{_e(env)}: {_e(reason)}.</p>')
    return "".join(out)


def _table(headers: list[str], rows: list[list[object]], table_id: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(v)}</td>" for v in r) + "</tr>" for r in rows)
    ident = f' id="{table_id}"' if table_id else ""
    return f'<div class="scroll"><table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def compare_section(change: CampaignChange) -> str:
    rows = [[c.node, c.test, c.params, c.metric, c.compared, _num(c.base_value), _num(c.new_value),
             "—" if c.diff is None else f"{c.diff:+.3f}",
             "—" if c.diff_ci_low is None else f"{c.diff_ci_low:+.3f} to {c.diff_ci_high:+.3f}",
             "—" if c.p_adjusted is None else fmt_p(c.p_adjusted), c.verdict, " ".join(c.flags), c.sentence]
            for c in change.cells]
    extra = "" if change.cells else (f"<p><b>{_e(change.base)} and {_e(change.new)} have no cell in common "
                                     f"(node, test, params and metric): nothing to compare.</b></p>")
    if change.only_in_base or change.only_in_new:
        base, new = change.only_in_base_labels or change.only_in_base, change.only_in_new_labels or change.only_in_new
        extra += (f'<p class="note">Only in {_e(change.base)}: {_e(", ".join(base) or "none")}. '
                 f'Only in {_e(change.new)}: {_e(", ".join(new) or "none")}.</p>')
    return (f"<p>Each cell's ratio (or, for a cell with one environment, its median) in {_e(change.base)} "
            f"(base) and {_e(change.new)} (new), the difference with a "
            f"95% bootstrap interval over both campaigns' runs, and a verdict ({_e(change.correction)} "
            f"correction, threshold ±{change.threshold * 100:.1f}%).</p>"
            + _table(["node", "test", "params", "metric", "compared", "base", "new", "difference", "95% CI",
                      "p adjusted", "verdict", "flags", "sentence"], rows, "compare") + extra)


def render_html(data: ReportData, change: CampaignChange | None = None) -> str:
    """The whole page as one string."""
    return "".join(html_parts(data, change))


def html_file(data: ReportData, change: CampaignChange | None = None) -> tuple[IO[bytes], int]:
    """The page, UTF-8, in a temporary file (exports.spooled) and its size: the API sends it in chunks. As one
    string, a 20k-cell campaign's 104 MB page took ~480 MB more than its data (its pieces, their join, the
    printable copy, and the response's bytes)."""
    def write(out: IO[bytes]) -> None:
        for part in html_parts(data, change):  # not writelines: a spooled file takes all of it before rolling over
            out.write(part.encode())

    return spooled(write)


def html_parts(data: ReportData, change: CampaignChange | None = None) -> Iterator[str]:
    """The page in pieces, each made printable (which escapes character by character: the pieces joined are the
    page made printable whole), one a cell's distributions: no piece holds them all."""
    rep = data.report
    primary = headline_cells(rep.cells)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    shown_ids = {c.id for c in primary}
    shown = [s for s in rep.summary if shown_ids & set(s.cells)]
    summary = "".join(f"<li>{_e(s.sentence)}</li>" for s in shown)
    if len(shown) < len(rep.summary):
        summary += (f'<li class="note">{len(rep.summary) - len(shown)} more summaries of secondary metrics: '
                    f'see <code>podtax report --all-metrics</code> and the full table.</li>')
    warnings = "".join(f"<li>{_e(w)}</li>" for w in rep.warnings)
    flag_rows = [[c.node, c.test, c.params, c.metric, f, d] for c in rep.cells for f, d in c.flag_details.items()]
    prov = [[p["node"], p["env"], p["runs"], "; ".join(p["tools"]) or "unknown", "; ".join(p["kernels"]) or "unknown",
             "; ".join(p["cpus"]) or "unknown", p["os"] or "", p["arch"] or "", p["hw_threads"] or ""]
            for p in data.provenance]
    places = [[p["placed_at"], p["namespace"], p["pod"], p["node"] or "not placed", p["test"],
               "" if p["score"] is None else f"{p['score']:.1f}",
               ", ".join(f"{c.get('node')} {c.get('score', 0):.1f}" for c in p["candidates"]), p["message"]]
              for p in data.placements]
    full = [[c.node, c.test, c.params, c.metric, c.unit, c.n_host, c.n_pod,
             c.host_modes or ("—" if c.host_median is None
                              else bound_mark(c.host_lower_bound, c.host_upper_bound) + fmt(c.host_median, c.unit)),
             c.pod_modes or ("—" if c.pod_median is None
                             else bound_mark(c.pod_lower_bound, c.pod_upper_bound) + fmt(c.pod_median, c.unit)),
             _num(c.ratio), _num(c.ci_low), _num(c.ci_high), "—" if c.p_adjusted is None else fmt_p(c.p_adjusted),
             c.direction or c.verdict, " ".join(c.flags), caveat(c) or ""] for c in rep.cells]
    legend = "".join(f"<li><b>{_e(k)}</b>: {_e(v)}</li>" for k, v in LEGEND.items())
    sections = [
        f"<h1>podtax report: {_e(rep.campaign)}</h1>",
        f'<p class="note">Generated {now}. {len(rep.cells)} cells; {rep.correction} correction; 95% intervals. '
        f'Contents: <a href="#matrix">matrix</a> · <a href="#summary">summary</a> · '
        + ('<a href="#compare-section">comparison</a> · ' if change else "")
        + '<a href="#details">distributions</a> · <a href="#time">runs over time</a> · '
        '<a href="#phases">control-plane phases</a> · <a href="#placements">placements</a> · '
        '<a href="#provenance">provenance</a> · <a href="#flags">flags</a> · <a href="#full">full table</a></p>',
        f"<ul>{warnings}</ul>" if warnings else "",
        '<h2>Test × node matrix</h2>', _legend(rep.threshold), _matrix(data),
        f'<h2 id="summary">Across nodes</h2><ul>{summary or "<li>no cells</li>"}</ul>',
    ]
    if change is not None:
        sections += [f'<h2 id="compare-section">Compared with {_e(change.base)}</h2>', compare_section(change)]
    sections += [
        '<h2 id="details">Distributions per cell</h2><p class="note">Every run is a marker (one shape per side); '
        'the black bar is the side\'s median.</p>',
    ]
    after = [
        '<h2 id="phases">Control-plane phases</h2>', _phases(data),
        '<h2 id="placements">Scheduler placements</h2>',
        _table(["when", "namespace", "pod", "node", "test", "score", "candidates", "message"], places,
               "placement-table")
        if places else "<p>No placement of a pod naming one of this campaign's tests is stored.</p>",
        '<h2 id="provenance">Provenance per node and side</h2>',
        _table(["node", "environment", "runs", "tool builds", "kernel", "CPU", "OS", "arch", "hw threads"], prov,
               "provenance-table"),
        '<h2 id="flags">Flags</h2>', f'<ul class="note">{legend}</ul>',
        _table(["node", "test", "params", "metric", "flag", "what it means here"], flag_rows, "flag-table")
        if flag_rows else "<p>No cell carries a flag.</p>",
        '<h2 id="full">Full comparison table</h2>',
        _table(["node", "test", "params", "metric", "unit", "n base", "n cand.", "base median", "cand. median",
                "ratio", "CI low", "CI high", "p adjusted", "verdict", "flags", "caveat"], full, "full-table"),
    ]
    # control characters from the bus (a node `\x1b]0;...`, a unit `ms\x1b[2J`) written as \xNN: XML cannot hold
    # them, so each plot was not well-formed SVG, and HTML calls them parse errors
    yield printable('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
                    f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
                    '<meta name="viewport" content="width=device-width, initial-scale=1">'
                    '<link rel="icon" href="data:,">'  # no favicon request: nothing is fetched
                    f"<title>podtax report: {_e(rep.campaign)}</title><style>{CSS}</style></head><body>"
                    + "".join(sections))
    yield from (printable(_cell_detail(data, c)) for c in primary)
    yield printable('<h2 id="time">Runs over time, per node</h2>')
    yield from (printable(part) for part in _timelines(data))
    yield printable("".join(after) + "</body></html>")
