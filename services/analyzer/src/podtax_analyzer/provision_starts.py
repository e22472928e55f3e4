"""Which start each Kubernetes figure of provisioned and bound used (podtax.phases.provision_start): the claim's
create, or, in a run of a WaitForFirstConsumer class, when the claim was seen given a node. The template's definition
names both, so a phase-table row said neither which one its runs used nor that a side's runs mixed them (a default
class changed between runs, review of the control-plane leftovers): each row now says its start per side, with its
run count, and a side whose runs mixed the two has no ratio (its median pools two different intervals). A run timed
from the node carries the parser's run flag podtax.phases.NODE_START_FLAG; the others of the phase were timed from
the create (a run whose start is not known has no such figure)."""

from __future__ import annotations

from dataclasses import replace

from podtax import phases as ph

from podtax_analyzer.celldata import CellData
from podtax_analyzer.reads import Cursor

Starts = dict[tuple[str, str, str, str, str, str], tuple[int, int, int]]  # (cluster, node, test, params, metric,
# env) -> (runs with the metric, of them timed from the node, from the create)
MIXED = "not comparable"


def _phases() -> list[str]:
    return sorted({p.name for phases in ph.PHASES.values() for p in phases if p.start == ph.PROVISION_START})


def provision_starts(con: Cursor, campaign: str) -> Starts:
    """Per cell side of a metric of a phase that starts at provision_start: its ok runs, those timed from the node and
    those from the create (flagged so, or without consumer pods: always from the create). A consumer run parsed
    before the run flags is neither: its start is not known until it is parsed again."""
    metrics = _phases()
    if not metrics:
        return {}
    rows = con.execute(f"""
        SELECT r.cluster, r.node, r.test, r.params_key, m.name, r.env, count(*),
               count(*) FILTER (WHERE len(list_filter(r.flags, lambda f: starts_with(f, $node))) > 0),
               count(*) FILTER (WHERE len(list_filter(r.flags, lambda f: starts_with(f, $create))) > 0
                                OR coalesce(TRY_CAST(json_extract(r.params, '$.consumer') AS BOOLEAN), false) = false)
        FROM runs r JOIN metrics m ON m.run_id = r.run_id
        WHERE r.campaign = $campaign AND r.status = 'ok'
          AND regexp_matches(m.name, '^({"|".join(metrics)})_')
        GROUP BY ALL""", {"campaign": campaign, "node": ph.NODE_START_FLAG, "create": ph.CREATE_START_FLAG}).fetchall()
    return {tuple(r[:6]): (int(r[6]), int(r[7]), int(r[8])) for r in rows}


def said(template: str, env: str, phase: str, runs: int, node: int, create: int) -> tuple[str, str | None] | None:
    """The definition of a side's figure by the start its `runs` used (`node` of them from the node, `create` from
    the create), and why the figure is not comparable when they mixed the two, or some runs' start is known and
    others' is not (else None); None when the side's phase does not start at provision_start (Nomad's provisioned:
    its create call)."""
    if ph.definition_from(template, env, phase, ph.FROM_CREATE) is None:
        return None
    if node and create:
        why = (f"{MIXED}: {node} of {runs} {env} runs timed {phase} from when the claim was seen given a node "
               f"(WaitForFirstConsumer), {create} from its create: their median pools two different "
               f"intervals; no ratio is given (run each class in a campaign of its own, or name the class)")
        return f"mixed: {node} of {runs} runs from the claim's node, {create} from its create", why
    if node + create < runs:  # parsed before the run flags: which start, not known
        which = 'node' if node else 'create'
        known = f", {node + create} from the {which}" if node + create else ""
        either = next(p.definition for p in ph.PHASES[(template, env)] if p.name == phase)  # names both starts
        # beside runs of a known start, the unknown ones may have used the other: the median may pool the two
        why = (f"{MIXED}: the start of {runs - node - create} of {runs} {env} runs is not recorded (parsed before "
               f"the PROVISION_START run flag), {node + create} were timed from the {which}: their median may pool "
               f"two different intervals; no ratio is given (`podtax reparse` them)") if node + create else None
        return (f"{either} (start not recorded for {runs - node - create} of {runs} runs{known}: parsed before the "
                f"PROVISION_START run flag; `podtax reparse` them)"), why
    text = ph.definition_from(template, env, phase, ph.FROM_NODE if node else ph.FROM_CREATE)
    return f"{text} (as all {runs} runs)", None


def checked(con: Cursor, cells: list[CellData]) -> list[CellData]:
    """`cells` (of one campaign), those of a provisioned or bound figure a side of which mixed the two starts (said)
    with their sentence in starts_mixed: the comparison's CONFOUNDED, which withholds the ratio and the verdict in
    every output (the phase table, the report, the exports, the runner), not in the phase table only."""
    phase_of = {c.metric: next((p for p in _phases() if c.metric.startswith(p + "_")), None) for c in cells}
    if not any(phase_of.values()):
        return cells
    starts = provision_starts(con, cells[0].campaign)
    out = []
    for c in cells:
        whys = [start[1] for env in c.pair if env and (phase := phase_of[c.metric])
                and (found := starts.get((c.cluster, c.node, c.test, c.params_key, c.metric, env)))
                and (start := said(c.test, env, phase, *found)) and start[1]]
        out.append(replace(c, starts_mixed="; ".join(w[0].upper() + w[1:] for w in whys)) if whys else c)
    return out


FROM = {"node": "from when the claim was seen given a node (WaitForFirstConsumer)", "create": "from the claim's create"}


def _all_one(found: tuple[int, int, int] | None) -> str | None:
    """"node" or "create" when every run of a side used that start, else None (mixed, or not known)."""
    if found is None:
        return None
    runs, node, create = found
    return "node" if node == runs else "create" if create == runs else None


def changed(starts: dict[str, Starts], key: tuple[str, str, str, str, str], envs: tuple[str, ...]) -> str | None:
    """CONFOUNDED's sentence for the cell `key` (cluster, node, test, params, metric) of two campaigns (`starts`:
    BASE then NEW, campaign -> provision_starts), else None: a side whose runs in one campaign mixed the two starts
    or known and unknown ones (said: its median pools two intervals), whose runs all used one start in one campaign
    and all the other in the other (the figure's definition changed, which `podtax compare` would read as a change
    of the backend), or whose start is not recorded in one campaign and known in the other."""
    phase = next((p for p in _phases() if key[4].startswith(p + "_")), None)
    for env in envs:
        if not env or phase is None or ph.definition_from(key[2], env, phase, ph.FROM_CREATE) is None:
            continue
        found = {name: at.get((*key, env)) for name, at in starts.items()}
        for name, one in found.items():
            if one and (start := said(key[2], env, phase, *one)) and start[1]:
                return f"Not comparable in {name}: {start[1].removeprefix(MIXED + ': ')}."
        used = {name: _all_one(one) for name, one in found.items()}
        if None not in used.values() and len(set(used.values())) == 2:
            said_ = " and ".join(f"{FROM[start]} in {name}" for name, start in used.items())
            return (f"Not comparable: {env} runs timed {phase} {said_}: the figure's definition changed between "
                    f"the campaigns, which a difference would read as a change of the backend; no change is given.")
        unknown = [name for name, one in found.items() if one and one[0] and not one[1] + one[2]]
        if unknown and any(used.values()):
            return (f"Not comparable: the start of the {env} runs' {phase} is not recorded in {unknown[0]} (parsed "
                    f"before the PROVISION_START run flag), known in the other campaign: the figure's definition may "
                    f"have changed between the campaigns; no change is given (`podtax reparse` it).")
    return None
