"""Everything computed for one cell before the campaign-wide correction, and the final verdict."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import duckdb
import numpy as np
from podtax import templates

from podtax_analyzer import flags as fl
from podtax_analyzer import object_flags as ofl
from podtax_analyzer import outlier_flags
from podtax_analyzer.cell_modes import modes_are_drift, modes_gap, modes_of, modes_text
from podtax_analyzer.cell_sentences import NOT_FINITE, bound_sentence, sentence, zero_median
from podtax_analyzer.cell_wording import descriptive_sentence, set_by_sentence
from podtax_analyzer.celldata import CellData, Side
from podtax_analyzer.report_models import CellComparison, OutlierOut
from podtax_analyzer.run_ids import run_ids_at
from podtax_analyzer.stats.bootstrap import RatioCI, bca_ratio_of_medians
from podtax_analyzer.stats.drift import detect_drift
from podtax_analyzer.stats.few_runs import note as few_runs_note
from podtax_analyzer.stats.few_runs import unchecked
from podtax_analyzer.stats.hodges_lehmann import hl_ratio
from podtax_analyzer.stats.medians import of_sorted
from podtax_analyzer.stats.modes import check_unimodality, two_means_boundary
from podtax_analyzer.stats.outliers import (
    GROUP_CUTOFF,
    cutoffs_within,
    group_z,
    modified_z_within,
    off_the_scale,
    outliers_of,
    second_group_of,
)
from podtax_analyzer.stats.ranktest import mann_whitney
from podtax_analyzer.stats.two_strays import pair_z, pairs_of
from podtax_analyzer.stats.verdict import (
    FASTER,
    INCONCLUSIVE,
    NO_DIFFERENCE,
    NOT_COMPARABLE,
    SET_BY_PARAMS,
    SLOWER,
    decide,
    groups_cross,
    quotient_bound,
    side_bound,
)
from podtax_analyzer.wording import fmt_pct, fmt_ratio, side_name


@dataclass
class Analysis:
    """A cell's statistics before correction. ``fields`` are CellComparison fields except the
    verdict, p_adjusted and sentence, which need the campaign-wide correction. The outliers' run ids
    are left empty: ``outlier_at`` gives each one's (side env, position in its values) for
    run_ids.run_ids_at (see fill_run_ids)."""

    cell: CellData
    fields: dict = field(default_factory=dict)
    flag_details: dict[str, str] = field(default_factory=dict)
    outlier_at: list[tuple[str, int]] = field(default_factory=list)
    set_by: templates.Fixed | None = None  # what fixes the metric (templates.set_by_params): no verdict
    lone_outliers: str | None = None  # OUTLIERS' detail when a side's one outlier is its group (finalize)


def _median(x: np.ndarray) -> float | None:
    """Median of an ascending array, None when empty."""
    return of_sorted(x) if len(x) else None


def _snapped(x: float | None, ratio: float | None) -> float | None:
    """An interval end within float rounding of the ratio is the ratio (sides of identical values gave 95% CI
    0.8999999999999996 to 0.8999999999999996 beside ratio 0.9)."""
    return ratio if x is not None and ratio is not None and math.isclose(x, ratio, rel_tol=1e-12) else x


def _not_finite(cell: CellData) -> str | None:
    """Why no ratio: the runs whose stored value is NaN or infinite (a forged, edited or misparsed result), if any."""
    bad = [f"{k} of {s.n} {side_name(s.env, cell.pair)} runs" for s in (cell.host, cell.pod)
           if (k := int(np.count_nonzero(~np.isfinite(s.values))))]
    return f"{NOT_FINITE}{' and '.join(bad)} stored a value that is not a finite number (NaN or infinity)" \
        if bad else None


def _pick_interval(bca: RatioCI, hl: RatioCI, warnings: list[str]) -> tuple[float | None, float | None, str | None]:
    low, high, method = _interval(bca, hl, warnings)
    return _snapped(low, bca.estimate), _snapped(high, bca.estimate), method


def _interval(bca: RatioCI, hl: RatioCI, warnings: list[str]) -> tuple[float | None, float | None, str | None]:
    if bca.low is not None and bca.stable:
        if hl.estimate is not None and hl.low is not None and not (bca.low <= hl.estimate <= bca.high):
            warnings.append(f"cross-check: the Hodges-Lehmann ratio {fmt_ratio(hl.estimate)} lies outside "
                            f"the bootstrap interval; the two estimators disagree")
        return bca.low, bca.high, "bca"
    if hl.low is not None:
        warnings.extend(f"bootstrap: {w}" for w in bca.warnings)
        warnings.append("the bootstrap interval is unstable here; the Hodges-Lehmann interval is shown")
        return hl.low, hl.high, "hodges-lehmann"
    if hl.estimate is not None:
        # positive values, yet too few runs for any distribution-free 95% interval (2 or 3 a side): the
        # widest interval these data allow covers 67% or 90%, so the coarse bootstrap's is not shown
        warnings.extend(f"bootstrap: {w}" for w in bca.warnings)
        warnings.append("too few runs for a 95% interval of the ratio")
        return None, None, None
    if bca.low is not None:
        warnings.extend(f"bootstrap: {w}" for w in bca.warnings)
        return bca.low, bca.high, "bca"
    return None, None, None


def analyze(cell: CellData, *, threshold: float, seed: int) -> Analysis:
    """Flags, estimates and the rank test of one cell (see comparisons.py for the contract)."""
    h, p = cell.host, cell.pod
    details: dict[str, str] = {}
    warnings: list[str] = []
    # Each side is sorted once here and shared by every statistic below (ranks, medians, dip test,
    # bootstrap, Hodges-Lehmann, Mann-Whitney).
    asc = {s.env: np.sort(s.values) for s in (h, p)}
    # a side whose runs mix units (CONFOUNDED names them) has no shape, trend or outlier on one scale: not checked
    shaped = [s for s in (h, p) if s.n and len(s.units) < 2]
    checks = {s.env: check_unimodality(s.values, asc[s.env]) for s in shaped}
    drifts = {s.env: detect_drift(s.values, threshold, asc[s.env]) for s in shaped}
    # each bimodal side's 2-means split, once (the separated-modes check has it already, stats/modes.py)
    splits = {s.env: checks[s.env].boundary if checks[s.env].separated is not None else two_means_boundary(s.values)
              for s in shaped if checks[s.env].bimodal}
    for s in shaped:  # 4 runs in two pairs: two modes or strays, no pair told wrong; the median describes neither
        if not checks[s.env].bimodal and (two := pairs_of(s.values)) is not None:  # (stats/two_strays.py)
            checks[s.env], splits[s.env] = replace(checks[s.env], bimodal=True, pairs=two.apart), two.boundary
    for s in shaped:
        if checks[s.env].bimodal and modes_are_drift(s.values, drifts[s.env], splits[s.env]):
            checks[s.env] = replace(checks[s.env], bimodal=False)
            warnings.append(f"the {side_name(s.env, cell.pair)} values form two groups, before and after a "
                            f"change point: reported as DRIFT rather than BIMODAL")
        if checks[s.env].bimodal and (gap := modes_gap(s.values, splits[s.env])) is not None \
                and gap < threshold:
            checks[s.env] = replace(checks[s.env], bimodal=False)
            warnings.append(f"the {side_name(s.env, cell.pair)} values form two modes {fmt_pct(gap)}% apart, closer "
                            f"than the ±{fmt_pct(threshold)}% threshold: they cannot change a verdict at it, so "
                            f"they do not withhold the ratio (not BIMODAL)")
    cell_modes, modes, boundaries = modes_of(cell, checks, splits)
    zs = {s.env: pair_z(s.values, modified_z_within(s.values, boundaries.get(s.env)))  # two_strays.py
          if s.env in checks else np.zeros(s.n) for s in (h, p)}
    found, limits, grouped, group = _outliers(cell, zs, {s.env: cutoffs_within(s.values, boundaries.get(s.env))
                                                         for s in (h, p)})
    if few := [(side_name(s.env, cell.pair), s.values) for s in (h, p)
               if s.env in checks and unchecked(s.values, found[s.env])]:
        warnings.append(few_runs_note(few))  # 3 or 4 runs: only a run noise cannot explain is flagged (few_runs.py)
    # the sides whose values lie on both sides of their boundary: scored within each mode, from its median
    split = frozenset(s.env for s in (h, p) if s.env in boundaries and 0 < (s.values < boundaries[s.env]).sum() < s.n)
    candidates = {
        # a side mixing the provision starts (provision_starts.checked) and another reason (units...): both said
        "CONFOUNDED": "; ".join(w for w in (cell.starts_mixed, fl.confounded(cell)) if w),  # as checked joins
        "INSUFFICIENT": fl.insufficient(cell),
        "IMBALANCED": fl.imbalanced(cell), "BIMODAL": fl.bimodal(cell, checks, modes),
        "DRIFT": fl.drift(cell, drifts), "THROTTLED": fl.throttled(cell), "SHORT": fl.short(cell),
        "ROUNDED_RUNTIME": fl.rounded_runtime(cell),
        "FEW_OBSERVATIONS": fl.few_left_out(cell), "ERRORS": ofl.errors(cell), "LOWER_BOUND": ofl.lower_bound(cell),
        "WATCH_GAP": ofl.watch_gap(cell), "RETRIED": ofl.retried(cell),
        "DELETE_REFUSED": ofl.delete_refused(cell), "LEFT_BEHIND": ofl.left_behind(cell),
        "SLOW_OBJECTS": ofl.slow_objects(cell),
        "OUTLIERS": outlier_flags.outliers(cell, found, limits, (group, grouped), split), "OVERLAP": fl.overlap(cell),
        "VERSION_MISMATCH": fl.version_mismatch(cell), "PARAMS_MISMATCH": fl.params_mismatch(cell),
        "IMPORTED": fl.imported(cell),
    }
    for name in fl.ORDER:  # SEQUENTIAL is set over the campaign's runs in time order, by sequence.mark
        if candidates.get(name):
            details[name] = candidates[name]
    ratio = lo = hi = method = p_value = None
    hl = RatioCI(None, None, None, 0.95, "hodges-lehmann", False)
    # every run's value as a list (2,000 Python floats at 1,000 runs a side) only for a metric a rule names
    ruled = (cell.test, cell.metric) in templates.SET_BY_PARAMS
    set_by = templates.set_by_params(cell.test, cell.params_key, cell.metric, [*h.values, *p.values] if ruled else [],
                                     h.n_short + p.n_short)
    # one rule for every flag that withholds the ratio (podtax.flags.WITHHOLD_RATIO), and for a metric the
    # parameters fix: nothing is estimated
    if h.n and p.n and not details.keys() & fl.WITHHOLD_RATIO and not set_by:
        rng = np.random.default_rng([seed, int(cell.id, 16)])
        hs, ps = asc[h.env], asc[p.env]
        bca = bca_ratio_of_medians(hs, ps, rng=rng, presorted=True)
        ratio = bca.estimate
        # too few runs (podtax.flags.WITHHOLD_INFERENCE): the ratio of medians only, no interval, effect or
        # p-value, so the cell is no hypothesis of the correction family and moves no other cell's p_adjusted
        if not details.keys() & fl.WITHHOLD_INFERENCE:
            hl = hl_ratio(hs, ps, presorted=True)
            rank = mann_whitney(hs, ps, presorted=True)
            # a metric with no variance at all (e.g. a fixed event count) is not a hypothesis: no p-value
            p_value = None if rank.method == "degenerate" else rank.p_value
            warnings.extend(f"rank test: {w}" for w in rank.warnings)
            lo, hi, method = _pick_interval(bca, hl, warnings)
        if not all(x is None or math.isfinite(x) for x in (ratio, lo, hi)):
            # medians near the float limits (a forged or misparsed result): inf/inf, x/0 or an overflow
            warnings.append("the ratio or its interval is not a finite number: the values are too close "
                            "to the limits of floating point")
            ratio = lo = hi = method = None
    if ratio is None and (odd := _not_finite(cell)):
        warnings.append(odd)
    outlier_at = [(s.env, int(i)) for s in (h, p) for i in found[s.env]]
    # a side's one outlier is its group beside the other side's one outlier or second group if the sides are read at
    # each level (_main_and_group, finalize): the flag then says each run once, in the groups' phrase
    at = {s.env: grouped[s.env] if s.env in grouped else found[s.env] for s in (h, p)}
    lone = None
    if len(grouped) < 2 and all(s.env in grouped or len(found[s.env]) == 1 for s in (h, p)):
        main = outlier_flags.second_group(cell, [(env, float(side.values[i])) for side in (h, p)
                                                 for env in (side.env,) for i in at[env]], main=True)
        lone = outlier_flags.outliers(cell, found, limits, (main, at), split) if main else None
    outliers = [OutlierOut(run_id="", env=s.env, value=float(s.values[i]), z=float(zs[s.env][i]),
                           group=i in grouped.get(s.env, ())) for s in (h, p) for i in found[s.env]]
    # runs that gave the metric in two units (on a side, or one a side) have no median in the cell's unit
    # (CONFOUNDED names each side's units)
    one_unit = len({*h.units, *p.units}) < 2
    fields = dict(
        id=cell.id, campaign=cell.campaign, cluster=cell.cluster, node=cell.node, test=cell.test,
        baseline=cell.baseline, candidate=cell.candidate,
        params=cell.params_key,
        metric=cell.metric, unit=cell.unit, higher_is_better=cell.higher_is_better, n_host=h.n, n_pod=p.n,
        host_median=_median(asc[h.env]) if one_unit else None,
        pod_median=_median(asc[p.env]) if one_unit else None,
        host_modes=modes_text(cell_modes and cell_modes.host, cell.unit),
        pod_modes=modes_text(cell_modes and cell_modes.pod, cell.unit),
        host_tool_version=fl.version_text(h), pod_tool_version=fl.version_text(p),
        ratio=ratio, ci_low=lo, ci_high=hi, ci_method=method,
        hl_ratio=hl.estimate, hl_ci_low=hl.low, hl_ci_high=hl.high, p_value=p_value,
        change_pct=None if ratio is None else (ratio - 1.0) * 100.0,
        flags=list(details), flag_details=details, modes=cell_modes, outliers=outliers, warnings=warnings,
        host_lower_bound=h.median_is_bound, pod_lower_bound=p.median_is_bound,
        host_upper_bound=h.median_is_upper_bound, pod_upper_bound=p.median_is_upper_bound,
    )
    return Analysis(cell, fields, details, outlier_at, set_by, lone)


def _outliers(cell: CellData, zs: dict[str, np.ndarray], limits: dict[str, np.ndarray]
              ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray], str | None]:
    """Each side's outliers (indices), the cutoffs they were found beyond, the second groups' runs (indices, of each
    side that holds one: a group on one side does not hide the other's) and outlier_flags.second_group's phrase.
    Outliers lie beyond their side's cutoffs (``limits``, stats/outliers.py) and more than a step of the scale from
    their side's other runs (off_the_scale). A second group is looked for on each side by itself, beyond GROUP_CUTOFF
    (3.5) first, then beyond its cutoffs (stats.outliers.second_group_of). The other side's values are looked at only
    for the scale's step (with the side's own: a group lies more than a step from its side's other runs), so its
    outliers do not hide the group; nor does one of the side's own beyond its cutoff, which is left out of the group
    and still reported.
    When one is found, its runs are outliers too."""
    side = {cell.host.env: cell.host.values, cell.pod.env: cell.pod.values}
    found = {env: off_the_scale(side[env], outliers_of(z, limits[env]), _other(side, env)) for env, z in zs.items()}
    limits, grouped = dict(limits), {}
    for env, z in zs.items():
        z = group_z(side[env], z)  # a tied side (MAD 0): one run far off does not inflate the scale
        apart = np.isin(np.arange(len(z)), outliers_of(z, limits[env]))
        for cuts in (np.full(len(z), GROUP_CUTOFF), limits[env]):
            idx = second_group_of(side[env], z, cuts, apart, _other(side, env))
            if outlier_flags.second_group(cell, [(env, float(side[env][i])) for i in idx]):
                limits[env] = np.where(np.isin(np.arange(len(z)), idx), cuts, limits[env])
                found[env], grouped[env] = np.union1d(found[env], idx), idx
                break
    if not grouped and (toward := _toward(side, zs, found)):
        for env, i in toward.items():
            limits[env] = np.where(np.arange(len(zs[env])) == i, GROUP_CUTOFF, limits[env])
            found[env] = np.union1d(found[env], [i])
    group = outlier_flags.second_group(cell, [(env, float(side[env][i]))
                                              for env, idx in grouped.items() for i in idx])
    return found, limits, grouped, group


TOWARD = True  # bench/bench_crossed_mixes.py switches the rule off to measure its anchor in the same process
TOWARD_MAX_RUNS = 12  # _toward's sides: with more runs, heavy-tailed noise on one machine held such runs (below)
TOWARD_PAST = 0.5  # how far past the other side's median _toward's run may lie, as a share of the medians' gap


def _toward(side: dict[str, np.ndarray], zs: dict[str, np.ndarray], found: dict[str, np.ndarray]) -> dict[str, int]:
    """Each side's one run toward the other side's level when every side holds one and one of them lies within its
    cutoff (6 from 10 runs): the run farthest toward the other side's median, beyond GROUP_CUTOFF (3.5), nearer that
    median than its own side's and no more than TOWARD_PAST of the medians' gap past it (a second machine's run lies
    at the other side's level; one stray run a side at 85% of its side's level, the pod 10% slower, lies 1.5 gaps
    from its own median: read as two machines, 23.3% of such taxes were withheld, now 13.3%). One node name over two
    machines run 9/1 and 1/9 with the slow one at 80% of the fast one leaves such a run inside the cutoff (modified
    z-score 4 to 6 beside a 2% noise), and the ratio of medians read the machine gap as a tax (41 false claims in
    200 cells, bench/bench_crossed_mixes.py); as outliers, those runs are read at each level
    (stats.verdict.groups_cross). {} when a side holds none, or its outliers are others, or a side has more than
    TOWARD_MAX_RUNS runs: on one machine, noise with heavy tails (Student t, 3 to 5 degrees of freedom, 1-2%) puts
    such a run on each side of 15 to 30 runs often enough to withhold true taxes (25 more of 4,000 taxed cells, none
    of them at 10 runs a side)."""
    if not TOWARD or any(len(x) > TOWARD_MAX_RUNS for x in side.values()):
        return {}
    mid = {env: float(np.median(v)) for env, v in side.items()}
    out: dict[str, int] = {}
    for env, x in side.items():
        (other,) = [m for e, m in mid.items() if e != env] or [None]
        if other is None or len(x) < 3 or not np.isfinite(x).all():
            return {}
        i = int(np.argmin(x) if other < mid[env] else np.argmax(x))
        # where the run lies from its side's median (0) to the other side's (1): nearer the other, not far past it
        at = (x[i] - mid[env]) / (other - mid[env]) if other != mid[env] else 0.0
        if abs(zs[env][i]) <= GROUP_CUTOFF or not 0.5 < at <= 1 + TOWARD_PAST \
                or not np.array_equal(found[env], found[env][found[env] == i]) \
                or not len(off_the_scale(x, np.array([i]), _other(side, env))):  # a printed step off: no outlier
            return {}
        out[env] = i
    return out if any(i not in found[env] for env, i in out.items()) else {}


def _other(side: dict[str, np.ndarray], env: str) -> np.ndarray:
    """The values of the sides but ``env``."""
    return np.concatenate([v for e, v in side.items() if e != env] or [np.zeros(0)])


def fill_run_ids(con: duckdb.DuckDBPyConnection, analyses: list[Analysis]) -> None:
    """Name the run of every outlier of ``analyses`` (one query for all of them)."""
    wanted = [(a.cell, a.cell.host if env == a.cell.host.env else a.cell.pod, i)
              for a in analyses for env, i in a.outlier_at]
    ids = iter(run_ids_at(con, wanted))
    for a in analyses:
        for o in a.fields["outliers"]:
            o.run_id = next(ids)


def _side_bound(f: dict, key: str) -> frozenset[int]:
    """How a side's true median may lie from the shown one: larger (LOWER_BOUND), smaller (WATCH_GAP), both."""
    return side_bound(f[f"{key}_lower_bound"], f[f"{key}_upper_bound"])


def _main_and_group(a: Analysis, side: Side) -> tuple[list[float], list[float]]:
    """A side's values without its second group's runs, and that group's (groups_cross); a side without a group
    but with one outlier, that run as its group: one node name over two machines run 9/1 on the host and 1/9 on the
    pod leaves one run a side at the other side's level, and the ratio of medians was the machine gap ('Pod 64.8%
    slower', no pod effect planted); ([], []) for a side without either, which groups_cross needs on both sides
    (listing every value of every side was 0.18 s of a 500-cell table)."""
    mine = [(i, o) for (env, i), o in zip(a.outlier_at, a.fields["outliers"], strict=True) if env == side.env]
    at = sorted({i for i, o in mine if o.group}) or ([mine[0][0]] if len(mine) == 1 else [])
    if not at:
        return [], []
    values = np.asarray(side.values, dtype=float)
    return np.delete(values, at).tolist(), values[at].tolist()


def finalize(a: Analysis, p_adjusted: float | None, *, threshold: float, correction: str,
             other_params: str | None = None, descriptive: bool = False) -> CellComparison:
    """The cell's verdict and sentence. ``other_params``: flags.other_params' sentence when the two sides ran
    different params, which replaces the advice of INSUFFICIENT (more runs) and the sentence. ``descriptive``: a
    figure in no family (podtax.phases.is_descriptive): "inconclusive", its ratio said, unless a flag says why not."""
    f = dict(a.fields, p_adjusted=p_adjusted, descriptive=descriptive)
    if other_params and "INSUFFICIENT" in f["flag_details"]:
        f["flag_details"] = {**f["flag_details"], "INSUFFICIENT": other_params}
    group = outlier_flags.second_group(a.cell, [(o.env, o.value) for o in f["outliers"] if o.group])
    args = (f["ratio"], f["ci_low"], f["ci_high"], p_adjusted, f["higher_is_better"])
    split = {s.env: _main_and_group(a, s) for s in (a.cell.host, a.cell.pod)}
    levels = groups_cross(split[a.cell.host.env], split[a.cell.pod.env], f["ratio"], threshold)
    f["crossed_lone_runs"] = levels is not None and min(len(g) for _, g in split.values()) == 1  # summary leaves out
    if levels:  # the groups against the main runs' median, the level the sentence compares at, in the flag too
        main = outlier_flags.second_group(a.cell, [(env, v) for env, (_, g) in split.items() for v in g], main=True)
        if a.lone_outliers and "OUTLIERS" in f["flag_details"]:  # a side's one run: that flag said 'resist them'
            f["flag_details"] = {**f["flag_details"], "OUTLIERS": a.lone_outliers}  # or said it again ('Besides')
        elif group and main and "OUTLIERS" in f["flag_details"]:
            f["flag_details"] = {**f["flag_details"], "OUTLIERS": f["flag_details"]["OUTLIERS"].replace(group, main)}
        group = main
    # a group, or one run a side read at each level: never equivalent (decide's second_group), as the flag says
    rules = dict(threshold=threshold, blocked=bool(set(f["flags"]) & fl.BLOCKING), second_group=bool(group),
                 crossed=levels is not None and not levels.holds)
    # a side whose median is only a lower bound (LOWER_BOUND) or an upper one (WATCH_GAP) bounds the ratio:
    # stats/verdict.py's one rule
    bound = quotient_bound(_side_bound(f, "pod"), _side_bound(f, "host"))
    verdict, free = decide(*args, **rules, bound=bound), decide(*args, **rules)
    f["verdict"] = verdict if verdict in (FASTER, SLOWER, NO_DIFFERENCE) else INCONCLUSIVE
    if not (f["n_host"] and f["n_pod"] and f["candidate"]):  # no two sides: no verdict can exist
        f["verdict"] = NOT_COMPARABLE
    f["sentence"] = sentence(f, f["verdict"], threshold, correction, group, levels)
    if f["verdict"] == INCONCLUSIVE and verdict != free:  # the bound withheld the verdict the figures give
        f["sentence"] = bound_sentence(a.cell, f, free, correction, bound)
    if f["verdict"] == INCONCLUSIVE and (zero := zero_median(a.cell, f, correction)):
        f["verdict"], f["sentence"] = zero
    if other_params and f["verdict"] == NOT_COMPARABLE:
        f["sentence"] = f"Not comparable: {other_params[0].lower()}{other_params[1:]}"
    if f["verdict"] == NOT_COMPARABLE and (absent := fl.absent_phase(a.cell)):
        f["sentence"] = absent
    if a.set_by and (f["n_host"] or f["n_pod"]):  # one side or two: nothing to compare, in this or another campaign
        f["verdict"], f["sentence"] = SET_BY_PARAMS, set_by_sentence(f, a.set_by)
    elif descriptive and f["verdict"] != NOT_COMPARABLE and None not in (f["host_median"], f["pod_median"]) \
            and not rules["blocked"]:
        f["verdict"], f["sentence"] = INCONCLUSIVE, descriptive_sentence(f, group)
    return CellComparison(**f)
