"""The placement-policy evaluation (`podtax simulate`) as a section of the HTML report.

`podtax report C --html FILE --simulate WORKLOAD` runs the scheduler package's simulation (its own
command, in a child process: the library imports no service) on the campaign's measured speeds
and inserts its table, with each figure's 95% interval over seeds, into the analyzer's page.
Pure formatting here; the numbers are the simulation's.
"""

from __future__ import annotations

import html
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

COLUMNS = (("mean_jct_s", "mean JCT (s)", "{:,.1f}"), ("p95_jct_s", "p95 JCT (s)", "{:,.1f}"),
           ("makespan_s", "makespan (s)", "{:,.0f}"), ("jobs_per_h", "jobs/h", "{:,.1f}"),
           ("regret_pct", "regret vs oracle (%)", "{:,.1f}"), ("jct_vs_default", "JCT vs default", "{:.3f}"))


class SimulationFailed(ValueError):
    """The child's one-line reason (its own 'error: ' left off) and its exit status: 2 for a usage mistake such as a
    workload file that does not validate, 1 otherwise."""

    def __init__(self, reason: str, code: int) -> None:
        super().__init__(reason)
        self.code = code


def run(campaign: str, workload: Path, seeds: int, api: str | None) -> dict[str, Any]:
    """The simulation's JSON, or SimulationFailed with the child's one-line reason and status."""
    env = {**os.environ, **({"PODTAX_API_URL": api} if api else {})}
    proc = subprocess.run([sys.executable, "-m", "podtax_scheduler", "simulate", "--campaign", campaign,
                           "--workload", str(workload), "--seeds", str(seeds), "--json"],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        reason = lines[-1].removeprefix("error: ") if lines else f"podtax simulate exited with {proc.returncode}"
        raise SimulationFailed(reason, 2 if proc.returncode == 2 else 1)
    return json.loads(proc.stdout)


def _cell(value: Any, fmt: str) -> str:
    if not isinstance(value, list) or len(value) != 3:
        return "<td>–</td>"
    mid, low, high = (fmt.format(v) for v in value)
    return f'<td class="num">{mid} <span class="ci">[{low}, {high}]</span></td>'


def section(result: dict[str, Any], workload: Path) -> str:
    """An HTML section: one row per policy, mean and 95% CI over seeds of every figure."""
    head = "".join(f"<th>{html.escape(title)}</th>" for _, title, _ in COLUMNS)
    rows = []
    for policy, figures in result["policies"].items():
        cells = "".join(_cell(figures.get(key), fmt) for key, _, fmt in COLUMNS)
        rows.append(f"<tr><th scope=\"row\">{html.escape(policy)}</th>{cells}</tr>")
    return (f'<section id="simulation"><h2>Placement policies, simulated on these measurements</h2>'
            f'<p>{result["nodes"]} simulated nodes, workload {html.escape(workload.name)}, mean and 95% interval '
            f'over {result["seeds"]} seeds. Policies: default (LeastAllocated + BalancedAllocation), random '
            f'feasible, prototype (sum of results, read once), podtax (the scheduler\'s own plugins), oracle '
            f'(the true fastest node). Lower JCT, makespan and regret are better.</p>'
            f'<table><thead><tr><th>policy</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></section>')


TAIL = 65536  # where </body> is looked for first: the page's end


def insert_into(page: IO[bytes], fragment: str) -> None:
    """Put the fragment just before the page's last </body> (appended when there is none), in the page's file,
    whole (it may be 180 MB): only what follows </body> is read and written again."""
    end = page.seek(0, io.SEEK_END)
    start = max(0, end - TAIL)
    page.seek(start)
    at = page.read().rfind(b"</body>")
    if at < 0 and start > 0:  # not in the tail: anywhere before, or nowhere
        page.seek(0)
        at, start = page.read().rfind(b"</body>"), 0
    at = end if at < 0 else start + at
    page.seek(at)
    rest = page.read()
    page.seek(at)
    page.write(fragment.encode("utf-8") + rest)
