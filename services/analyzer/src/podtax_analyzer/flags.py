"""The flags of a cell, each with a sentence a person understands.

Each function returns the sentence when the flag applies, else None. Blocking flags (the verdict
becomes "inconclusive"): those in WITHHOLD_RATIO (CONFOUNDED, BIMODAL, OVERLAP, PARAMS_MISMATCH) also
withhold the headline ratio, its interval and p-value; INSUFFICIENT and DRIFT keep the ratio but not
the verdict (a drifting side breaks the interval's assumption of runs that do not change over time).
INSUFFICIENT also withholds the interval, the Hodges-Lehmann effect and the p-value (WITHHOLD_INFERENCE),
so a cell with too few runs leaves the multiple-testing family. The flags of control-plane objects (ERRORS,
LOWER_BOUND, LEFT_BEHIND) are in object_flags.py, OUTLIERS and its second group in outlier_flags.py.
"""

from __future__ import annotations

import numpy as np
from podtax import phases, sideparams

# The flag names, which of them block a verdict, and what each means are a contract shared with
# the CLI and the report: they live in podtax.flags (the library imports no service).
from podtax.flags import (  # noqa: F401
    BLOCKING,
    LEGEND,
    MAX_IMBALANCE,
    MIN_RUNS,
    ORDER,
    WITHHOLD_INFERENCE,
    WITHHOLD_RATIO,
)
from podtax.parsers.fio_flags import ROUNDED_MAX_MS, ROUNDED_SHARE

from podtax_analyzer.celldata import CellData, Side
from podtax_analyzer.stats.drift import Drift
from podtax_analyzer.stats.modes import MODE_MIN, Mode, Unimodality
from podtax_analyzer.wording import fmt_pct, fmt_share, fmt_value, p_text_of, plural, side_name


def version_text(side: Side) -> str | None:
    """Tool/version/build of a side: one string, several joined by " + ", None when no runs."""
    if side.n == 0:
        return None
    return " + ".join(v if v else "unknown version" for v in side.versions) or "unknown version"


def names(cell: CellData) -> tuple[str, str]:
    """What sentences call the baseline and the candidate: host and pod, or kubernetes and nomad."""
    return side_name(cell.baseline, cell.pair), side_name(cell.candidate, cell.pair)


def units_differ(metric: str, a: tuple[str, list[str]], b: tuple[str, list[str]], withheld: str) -> str:
    """CONFOUNDED's sentence when the runs of ``a`` and ``b`` (name, their distinct units) gave ``metric`` in
    more than one unit (a producer changed it): their values cannot be divided or subtracted."""
    return (f"Not comparable: {a[0]} runs reported {metric} in {' + '.join(a[1])} and {b[0]} runs in "
            f"{' + '.join(b[1])}, so their values are not in one unit; no {withheld} is given.")


def directions_differ(cell: CellData) -> str | None:
    """CONFOUNDED's sentence when the runs disagree on whether a higher ``metric`` is better (a producer changed it):
    a verdict's direction, faster or slower, would be a guess."""
    said = [(side_name(s.env, cell.pair), s.directions) for s in (cell.host, cell.pod) if s.n]
    if len({d for _, ds in said for d in ds}) < 2:
        return None
    words = {True: "higher", False: "lower"}
    runs = " and ".join(f"{name} runs said {' or '.join(words[d] for d in ds)}" for name, ds in said)
    return (f"Not comparable: the runs disagree on whether a higher or a lower {cell.metric} is better ({runs} is "
            f"better), so whether a difference is faster or slower is unknown; no ratio is given.")


def confounded(cell: CellData) -> str | None:
    h, p = cell.host, cell.pod
    if way := directions_differ(cell):
        return way
    if h.n == 0 or p.n == 0:  # one side (a one-environment cell, or the other side's runs missing)
        s = h if h.n else p
        if len(s.units) >= 2:
            return (f"Not comparable: {side_name(s.env, cell.pair)} runs reported {cell.metric} in "
                    f"{' + '.join(s.units)}, so their values are not in one unit and their median means nothing.")
        if s.n_emulated:  # its median is the emulator's speed, not the node's (compared between campaigns)
            return (f"Not comparable: {emulated_said(s, cell)}, so its {side_name(s.env, cell.pair)} median "
                    f"({fmt_value(float(np.median(s.values)), cell.unit)} {cell.unit}) measured the emulator, not "
                    f"the node.")
        return None
    base, cand = names(cell)
    if len({*h.units, *p.units}) > 1:  # values in two units cannot be divided (a producer changed its unit)
        return units_differ(cell.metric, (base, h.units), (cand, p.units), "ratio")
    problems = []
    if h.versions != p.versions:
        problems.append(f"{base} runs used {version_text(h)} and {cand} runs used {version_text(p)}")
    for s in (h, p):
        if len(s.versions) > 1:  # named here when the sides' sets are the same (else named above)
            which = f" ({version_text(s)})" if h.versions == p.versions else ""
            problems.append(f"{side_name(s.env, cell.pair)} runs mixed {len(s.versions)} tool builds{which}")
    problems += archs_differ(cell, base, cand)
    if not problems:
        return None
    return (f"Not comparable: {'; '.join(dict.fromkeys(problems))}, so a difference may come from the tool, "
            f"not the {cand} ({base} median {fmt_value(float(np.median(h.values)), cell.unit)} {cell.unit}, {cand} "
            f"median {fmt_value(float(np.median(p.values)), cell.unit)} {cell.unit}; no ratio is given).")


def archs_differ(cell: CellData, base: str, cand: str) -> list[str]:
    """The sides' tool executables built for other architectures (an armv7 image's 32-bit sysbench beside the arm64
    node's own: the same version is other code), judged only between runs that know it: a run of an older wrapper or
    agent (no tool_arch) differs from none. Runs whose executable ran through an emulator (an EMULATED run flag: an
    x86_64 sysbench under qemu-user on an arm64 node) measured the emulator."""
    h, p = cell.host, cell.pod
    problems = [emulated_said(s, cell) for s in (h, p) if s.n_emulated]
    if h.tool_archs and p.tool_archs and h.tool_archs != p.tool_archs:
        problems.append(f"{base} runs' executables were built for {' + '.join(h.tool_archs)} and {cand} runs' for "
                        f"{' + '.join(p.tool_archs)}")
    for s in (h, p):
        if len(s.tool_archs) > 1:
            problems.append(f"{side_name(s.env, cell.pair)} runs mixed executables built for "
                            f"{' + '.join(s.tool_archs)}")
    return problems


def emulated_said(s: Side, cell: CellData) -> str:
    """'8 pod runs ran a tool executable through an emulator ("EMULATED: ...")'."""
    return (f"{plural(s.n_emulated, side_name(s.env, cell.pair) + ' run')} ran a tool executable through an "
            f"emulator (\"{s.emulated_example}\")")


def absent_phase(cell: CellData) -> str | None:
    """"Not comparable (Nomad has no such phase): ..." when a side has no runs because its backend has no such
    phase (podtax.phases.ABSENT: Kubernetes' accepted, bound, deleted), which more runs will never change."""
    for s in (cell.host, cell.pod):
        if s.n == 0 and (why := phases.absent_metric(cell.test, s.env, cell.metric)):
            return f"Not comparable ({s.env.capitalize()} has no such phase): {why}."
    return None


def insufficient(cell: CellData) -> str | None:
    h, p = cell.host, cell.pod
    if (h.n >= MIN_RUNS and (p.n >= MIN_RUNS or not cell.candidate)) or absent_phase(cell):
        return None
    base, cand = names(cell)
    short = [s for s in ((h, p) if cell.candidate else (h,)) if s.n < MIN_RUNS]
    # runs with failed objects have no makespan or wall time: more runs would fail the same way (audit: "6 more
    # kubernetes runs are needed" after 6 such runs)
    lost = [s for s in short if s.failures.error_runs and s.n < s.failures.runs]
    if lost:
        why = " and ".join(f"{s.failures.runs - s.n} of the {s.failures.runs} {side_name(s.env, cell.pair)} runs"
                           for s in lost)
        return (f"Runs with failed objects have no {cell.metric}: {base} has {plural(h.n, 'run')} with it and "
                f"{cand} {p.n}, as {why} had failed objects (ERRORS). More runs will not help until no object fails.")
    if few := [s for s in short if s.n_few]:
        return few_observations(cell, few)
    if unrun := [s for s in short if not s.n and cell.campaign_envs and s.env not in cell.campaign_envs]:
        return not_in_campaign(cell, unrun)
    need = [f"{MIN_RUNS - s.n} more {side_name(s.env, cell.pair)} {'run' if MIN_RUNS - s.n == 1 else 'runs'}"
            for s in short]
    if not cell.candidate:
        return f"Too few runs: {base} has {h.n}; at least {MIN_RUNS} are needed."
    return (f"Too few runs: {base} has {h.n} and {cand} {p.n}; at least {MIN_RUNS} a side are needed, "
            f"so {' and '.join(need)} {'is' if len(need) == 1 and need[0].startswith('1 ') else 'are'} needed.")


NO_ENV = "environment to compare with"  # in INSUFFICIENT's text when the campaign's environments leave a side out


def not_in_campaign(cell: CellData, unrun: list[Side]) -> str:
    """INSUFFICIENT's text when a side has no runs because the campaign's environments leave it out (a volume-churn
    campaign of kubernetes only): "6 more nomad runs" are runs it will never make (audit, session 53)."""
    ran = [s for s in (cell.host, cell.pod) if s not in unrun]
    missing = " and ".join(side_name(s.env, cell.pair) for s in unrun)
    envs = " and ".join(sorted(cell.campaign_envs))
    add = (f"the campaign has no {missing} {NO_ENV} (its environments: {envs}): submit a "
           f"campaign with {missing} in its environments for a ratio.")
    if short := [s for s in ran if s.n < MIN_RUNS]:
        have = " and ".join(f"{side_name(s.env, cell.pair)} has {s.n}" for s in short)
        return f"Too few runs: {have}; at least {MIN_RUNS} are needed, and {add}"
    has = " and ".join(f"{side_name(s.env, cell.pair)} has {plural(s.n, 'run')}" for s in ran)
    return f"No ratio: {has}, but {add}"


FEW_HEAD = "Too few observations for"  # INSUFFICIENT's text when runs left this percentile out (FEW_OBSERVATIONS)


def few_observations(cell: CellData, few: list[Side]) -> str:
    """INSUFFICIENT's text when the short sides' runs left the metric out as a percentile they had too few
    observations for (the parser's FEW_OBSERVATIONS run flag): more runs like them will not add it."""
    base, cand = names(cell)
    runs = " and ".join(f"{s.n_few} {side_name(s.env, cell.pair)} {'run' if s.n_few == 1 else 'runs'}" for s in few)
    has = f"{base} has {plural(cell.host.n, 'run')} with it" + (f" and {cand} {cell.pod.n}" if cell.candidate else "")
    return (f"{FEW_HEAD} {cell.metric}: {runs} timed too few to report it (parser said: \"{few[0].few_example}\"); "
            f"{has}. More runs like these will not help: run longer or at a higher rate.")


def few_left_out(cell: CellData) -> str | None:
    """FEW_OBSERVATIONS: a side with enough runs of the metric (a short one is INSUFFICIENT's, few_observations)
    whose other runs left it out, having timed too few observations for it: its median is of the rest only."""
    some = [s for s in (cell.host, cell.pod) if s.n_few and s.n >= MIN_RUNS]
    if not some:
        return None
    sides = "; ".join(f"{s.n_few} of the {s.n + s.n_few} {side_name(s.env, cell.pair)} runs timed too few to "
                      f"report it, so the {side_name(s.env, cell.pair)} median is of the other {s.n}" for s in some)
    return (f"{FEW_HEAD} {cell.metric} in some runs: {sides} (parser said: \"{some[0].few_example}\"). The runs "
            f"left out timed the fewest observations (the shortest, or in ping-pong the slowest), so the median "
            f"may be lower than all runs' would be: run longer or at a higher rate.")


def other_params(cells: list[CellData]) -> dict[str, str]:
    """Cell id -> sentence for the cells with runs on one side only when, on the same node, test and
    metric, the other side ran only other params (podtax.sideparams): the two sides ran different params,
    which more runs would not fix. This replaces INSUFFICIENT's advice and the cell's sentence."""
    alone = [c for c in cells if c.candidate and bool(c.host.n) != bool(c.pod.n)]
    keys: dict[tuple[str, str, str, str], dict[str, set[str]]] = {}
    for c in alone:
        env = c.baseline if c.host.n else c.candidate
        keys.setdefault((c.cluster, c.node, c.test, c.metric), {}).setdefault(env, set()).add(c.params_key)
    out = {}
    for c in alone:
        if (ran := sideparams.one_sided(keys[c.cluster, c.node, c.test, c.metric], *c.pair)) is not None:
            base, cand = names(c)
            out[c.id] = (f"{base.capitalize()} and {cand} ran different params: {base} ran {ran[0]} and {cand} "
                         f"ran {ran[1]}, so each side's runs are in a cell of their own and no cell has a ratio; "
                         f"more runs will not help: give both sides the same params (the campaign file, or the "
                         f"import manifest's params column).")
    return out


def imbalanced(cell: CellData) -> str | None:
    h, p = cell.host.n, cell.pod.n
    lo, hi = min(h, p), max(h, p)
    if lo == 0 or hi <= MAX_IMBALANCE * lo:
        return None
    base, cand = names(cell)
    small = base if h < p else cand
    return (f"Uneven run counts: {base} has {h} runs and {cand} {p} ({hi / lo:.1f} to 1, more than "
            f"{MAX_IMBALANCE:.0f} to 1); the {small} side sets the uncertainty, add {small} runs.")


def _modes_text(side: str, modes: list[Mode], unit: str) -> str:
    parts = [f"{m.n} runs ({fmt_share(m.share)}%) near {fmt_value(m.median, unit)} {unit}"
             for m in modes if m.median is not None]
    return f"{side}: " + " and ".join(parts)


def _apart(times: float) -> str:
    """How many times apart two pairs lie, one decimal; "over 2" where that would print 2.0 (a split's pairs are
    more than twice apart: stats/two_strays.py)."""
    return f"{times:.1f}" if round(times, 1) > 2.0 else "over 2"


def _bimodal_evidence(side: str, c: Unimodality) -> str:
    """What found a side's two modes: the dip test, a gap between tight modes (stats/modes.py), or 4 runs in two pairs
    (stats/two_strays.py: neither pair is called wrong, as 4 runs cannot tell which, if either, strayed)."""
    if c.pairs is not None:
        return (f"{side}: its 4 measured runs fall into two pairs {_apart(c.pairs)} times apart, two modes or two "
                f"strays (either pair), which 4 runs cannot tell apart; its median lies between the pairs and "
                f"describes neither (add at least 2 measured runs: from {2 * MODE_MIN} two modes are told from strays)")
    if c.separated is None:
        return f"{side} dip test {p_text_of(c.dip_p)}"
    why = ("too few runs for the dip test" if c.dip_p is None
           else f"the dip test ({p_text_of(c.dip_p)}) misses a mode this small")
    return f"{side}: a gap of {c.separated:.0f} within-mode standard deviations between them; {why}"


def bimodal(cell: CellData, checks: dict[str, Unimodality], modes: dict[str, list[Mode]] | None) -> str | None:
    if modes is None:
        return None
    which = [side_name(env, cell.pair) for env, c in checks.items() if c.bimodal]
    tests = "; ".join(_bimodal_evidence(side_name(env, cell.pair), c) for env, c in checks.items()
                      if c.bimodal)
    base, cand = names(cell)
    two = "Two pairs of runs" if all(c.pairs for c in checks.values() if c.bimodal) else "Two modes"
    return (f"{two} in the {' and '.join(which)} values ({tests}): "
            f"{_modes_text(base, modes[cell.baseline], cell.unit)}; "
            f"{_modes_text(cand, modes[cell.candidate], cell.unit)}. "
            f"A single median would hide this, so no ratio is given.")


def drift(cell: CellData, drifts: dict[str, Drift]) -> str | None:
    parts = []
    for env, d in drifts.items():
        if d.drift and d.shift is not None:
            trend = ""
            if d.warmup is not None:  # the first runs apart from a flat rest (stats/drift.py warm_up)
                up = d.after is not None and d.before is not None and d.after > d.before
                slow = "slower" if up == cell.higher_is_better else "faster"
                side = side_name(env, cell.pair)
                first = f"{side} run was" if d.warmup == 1 else f"{d.warmup} {side} runs were"
                trend = (f"the first {first} {slow} than the rest (a warm-up?): leave "
                         f"warm-up runs out (more repetitions, or a warm-up run first) and re-run; ")
            elif d.slope is not None and d.total is not None:
                word = "rose" if d.total > 0 else "fell"
                trend = (f"{side_name(env, cell.pair)} values {word} by {fmt_pct(d.total)}% over {d.n} runs "
                         f"(Theil-Sen trend {d.slope * 100:+.2f}% per run); ")
            step = "up" if d.shift > 0 else "down"
            parts.append(f"{trend}the biggest step ({step} {fmt_pct(d.shift)}%) came after run {d.index} of {d.n} "
                         f"(median {fmt_value(d.before, cell.unit)} before, {fmt_value(d.after, cell.unit)} after; "
                         f"Pettitt {p_text_of(d.p_value)}"
                         + (f", Mann-Kendall trend {p_text_of(d.trend_p)}" if d.trend_p is not None else "")
                         + (f", least-squares trend of the logs {p_text_of(d.fit_p)})" if d.fit_p is not None else ")"))
    if not parts:
        return None
    return ("Drift over the campaign: " + "; ".join(parts) + ". Something changed while it ran, so the "
            "verdict is withheld.")


def throttled(cell: CellData) -> str | None:
    p = cell.pod
    if p.n_throttled == 0:
        return None
    limits = sorted({x for x in p.cpu_limits if x is not None})
    limit = f"; CPU limit {cores(limits)}" if limits else ""
    secs = p.throttled_usec / 1e6
    return (f"{p.n_throttled} of {p.n} pod runs were CPU-throttled by their cgroup "
            f"({fmt_value(secs)} s throttled in total{limit}): the pod was capped by its limit.")


def cores(limits: list[float]) -> str:
    """CPU limits in words: "1 core", "0.5 / 2 cores"."""
    return f"{' / '.join(f'{x:g}' for x in limits)} {'core' if limits == [1] else 'cores'}"


def _flagged_runs(cell: CellData, kind: str) -> tuple[str, str] | None:
    """("2 host runs and 1 pod run", one run's flag text) for the runs a run-level flag marks on each side
    (Side.n_<kind> and Side.<kind>_example), or None when none is."""
    sides = [s for s in (cell.host, cell.pod) if getattr(s, f"n_{kind}")]
    if not sides:
        return None
    runs = " and ".join(plural(getattr(s, f"n_{kind}"), side_name(s.env, cell.pair) + " run") for s in sides)
    return runs, getattr(sides[0], f"{kind}_example")


def short(cell: CellData) -> str | None:
    if (found := _flagged_runs(cell, "short")) is None:
        return None
    runs, example = found
    return (f"{runs} stopped before doing the requested work (parser said: \"{example}\"); "
            f"their values are not full-length measurements.")


def rounded_runtime(cell: CellData) -> str | None:
    """fio runs that did their I/O in 20 ms or less: their IOPS or bandwidth (this metric) is too low."""
    found = _flagged_runs(cell, "rounded")
    return None if found is None else (
        f"{found[0]} did their I/O in {ROUNDED_MAX_MS} ms or less, which fio times in whole ms rounded up "
        f"(\"{found[1]}\"): their figures may be over {ROUNDED_SHARE:.0%} too low; run longer (a larger size, or "
        f"time_based with a runtime).")


def version_mismatch(cell: CellData) -> str | None:
    """Runs whose log printed another tool version than the run recorded: which binary ran is in doubt."""
    if (found := _flagged_runs(cell, "mismatch")) is None:
        return None
    runs, example = found
    return (f"{runs} printed another tool version than the run recorded (\"{example}\"): the comparison uses "
            f"the logs' versions; check which binary each side runs (the node's `--version`, or the import "
            f"manifest's tool_version).")


def params_mismatch(cell: CellData) -> str | None:
    """Runs whose log shows other parameters than their cell's: they measured another cell."""
    if (found := _flagged_runs(cell, "params")) is None:
        return None
    runs, example = found
    return (f"{runs} ran with other parameters than this cell's (\"{example}\"): their figures measure another "
            f"cell, so no verdict; fix the run's parameters (or an import manifest's params) and run them again.")


def imported(cell: CellData) -> str | None:
    """Runs imported from old logs (`podtax import`): how many of each side, and whether podtax ran the rest."""
    sides = [s for s in (cell.host, cell.pod) if s.n_imported]
    if not sides:
        return None
    counts = " and ".join(f"{s.n_imported} of {plural(s.n, side_name(s.env, cell.pair) + ' run')}" for s in sides)
    head = f"Imported from logs recorded outside podtax (`podtax import`): {counts}."
    if all(s.n_imported == s.n for s in (cell.host, cell.pod)):
        return f"{head} podtax ran none of this cell's runs."
    return (f"{head} podtax made the other runs: the imported ones were not interleaved or spaced with them, so "
            f"check they measured the same setup.")


def overlap(cell: CellData) -> str | None:
    """OVERLAP blocks the verdict: runs that shared the node with another run measured each other."""
    if (found := _flagged_runs(cell, "overlap")) is None:
        return None
    runs, example = found
    return (f"{runs} overlapped in time with other runs on node {cell.node} (\"{example}\"), "
            f"so they measured each other; no verdict until the cell is re-run on an idle node.")
