"""Two sides that ran different tool builds: for one node, test and params, host runs whose logs print
sysbench 1.0.20 and pod runs whose logs print 1.0.18 (an import manifest of logs from two machines' tools).
The report flags such a cell CONFOUNDED and withholds its ratio (podtax_analyzer.flags.confounded): a
difference may come from the tool, not the pod. The import warns of it per node, test and params.

A run's build is what the analyzer compares (podtax_analyzer.celldata.VERSION_SQL): the tool, its version
and its build as the parser found them (the log's, else the row's tool_version), written
`sysbench 1.0.20 (build using system LuaJIT 2.1.0-beta3)`; a run whose log prints no version and whose row
names none is the tool alone (`hdparm`). A cell is confounded when both sides have runs and their sets of
builds differ, or either side mixed several builds. The analyzer keeps its own SQL of this:
tests/integration/test_import_builds.py holds the import's warnings to the cells a real analyzer flags.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import NamedTuple

from podtax import sides


class Build(NamedTuple):
    """A parsed run's tool, version and build (podtax.parsers.Parsed's tool, tool_version, tool_build)."""
    tool: str
    version: str | None
    build: str | None

    def text(self) -> str:
        """As VERSION_SQL writes it: concat_ws skips a missing version, an empty build is left out."""
        return " ".join(p for p in (self.tool, self.version, f"(build {self.build})" if self.build else None)
                        if p is not None)


def _shown(builds: Collection[Build]) -> str:
    texts = sorted({b.text() for b in builds})
    return texts[0] if len(texts) == 1 else f"{len(texts)} builds ({' + '.join(texts)})"


def confounded(builds_by_side: dict[str, set[Build]], baseline: str, candidate: str) -> tuple[str, str] | None:
    """(the baseline's builds, the candidate's) as text when the report flags the cell CONFOUNDED; None when a
    side has no runs or both ran one and the same build."""
    b = {x.text() for x in builds_by_side.get(baseline, set())}
    c = {x.text() for x in builds_by_side.get(candidate, set())}
    if not b or not c or (b == c and len(b) == 1):
        return None
    return _shown(builds_by_side[baseline]), _shown(builds_by_side[candidate])


def manifest_warnings(runs: Iterable[tuple[str, str, str, str, Build]]) -> list[str]:
    """One sentence per node, test and params of an import whose sides ran different tool builds; ``runs``
    are (node, test, params key, env, build) of the logs the parser accepts (a rejected log is a failed run,
    in no cell)."""
    cells: dict[tuple[str, str, str], dict[str, set[Build]]] = {}
    for node, test, key, env, build in runs:
        cells.setdefault((node, test, key), {}).setdefault(env, set()).add(build)
    out = []
    for (node, test, key), by_env in cells.items():
        envs = sorted(by_env, key=sides.rank)
        for i, b in enumerate(envs):
            for c in envs[i + 1:]:
                if (found := confounded(by_env, b, c)) is None:
                    continue
                unknown = sorted({x.tool for side in (b, c) for x in by_env[side] if x.version is None})
                out.append(f"{test}{' ' + key if key else ''} on {node}: the {b} rows ran {found[0]} and the {c} "
                           f"rows {found[1]}, so the report flags the cell CONFOUNDED and withholds its {c}/{b} "
                           f"ratio; run both sides with the same tool build"
                           + (f" ({' and '.join(unknown)} without a version: logs that print none, on rows with no "
                              "tool_version; give those rows the machine's `--version`)" if unknown else ""))
    return out
