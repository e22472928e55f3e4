"""Campaign against campaign: did the ratio of a cell change between BASE and NEW?

For every cell present in both campaigns (same node, test, parameters and metric), with r = the
cell's candidate/baseline ratio of medians (pod/host, nomad/kubernetes):

- ``diff`` = r(NEW) - r(BASE) and ``change`` = r(NEW) / r(BASE), each with a 95% percentile bootstrap
  interval: the four sides (two per campaign) are resampled separately, seeded per cell
  (podtax_analyzer.stats.change);
- a two-sided bootstrap p-value for "no change" (twice the smaller tail share of diff around 0),
  corrected across cells as in the report (Holm or BH), primary metrics and the others as separate
  families; a descriptive figure (podtax.phases.is_descriptive: kube-burner's min and avg of a control-plane
  phase) is in neither: its change, interval and raw p-value are given, no adjusted p-value and no verdict
  ("inconclusive", its sentence says why);
- the flags of both campaigns' cells (each explained, prefixed with the campaign); a blocking flag
  on either side withholds the verdict;
- no interval and no p-value when a compared side has fewer runs than the report's minimum
  (podtax.flags.MIN_RUNS, the INSUFFICIENT rule) in either campaign: a bootstrap of the median of 2 or 3
  values gives a tight interval that means nothing; diff and change are still given, as the report
  gives the ratio of such a cell, and the verdict is "inconclusive";
- a verdict from ``change`` with the report's rules (podtax_analyzer.stats.verdict): "improved" when
  the candidate side fares better in NEW than in BASE beyond the practical threshold, "worsened",
  "no detectable difference" (the interval of ``change`` lies within the threshold), or "inconclusive".

A cell with runs of one environment only (pod-startup on kubernetes, or a campaign that ran one side)
has no ratio: its median is compared instead, ``change`` = median(NEW) / median(BASE) and ``diff`` their
difference in the metric's unit, with the same bootstrap, p-value and verdict ("improved" when NEW fares
better). Such a median has a unit: when the two campaigns' runs gave it in different units (a parser that
changed it between versions) or one campaign's in several, the cell is "not comparable" and flagged CONFOUNDED
(on the campaign mixing units, else on NEW), with no figures, difference, interval or p-value; a ratio has no
unit. A cell whose campaigns' runs disagree on whether higher is better (a producer changed it) is "not comparable"
and NEW:CONFOUNDED too: whether a change improved or worsened it is unknown; so is a provisioned or bound cell whose
Kubernetes runs were all timed from the claim's create in one campaign and all from its node in the other
(provision_starts.changed): a change of the figure's definition, not of the backend; and one whose runs in a
campaign mixed the two starts, or whose start is not recorded in one campaign only. A compared environment whose runs
used another tool build in NEW than in BASE flags the row NEW:TOOL_CHANGED,
named in its details and its sentence, and withholds nothing: a ratio's two sides changed builds alike (the change
cancels to first order), and a one-environment cell is a control-plane one, whose version is its backend's (the
change may be what is compared); the sentence says which. ``compared`` says in words which figure is compared.
A cell whose two campaigns ran different
environments, or where one has a ratio and the other not for lack of a side, is "not comparable", and
its sentence says why.
"""

from __future__ import annotations

import hashlib

import duckdb
import numpy as np
from podtax import sides, templates
from podtax.flags import BOUND_MARKS, MIN_RUNS
from podtax.param_labels import Labels, label, params_labels
from podtax.phases import DESCRIPTIVE_WHY, is_descriptive
from podtax.pvalue import p_digits

from podtax_analyzer import flags as fl
from podtax_analyzer import provision_starts
from podtax_analyzer.compare_bounds import WORDS, bound_of, bound_why_of, way_of
from podtax_analyzer.compare_models import CampaignChange, CellChange
from podtax_analyzer.comparisons import UnknownCampaign, campaign_exists, compare_campaign
from podtax_analyzer.report_models import CellComparison
from podtax_analyzer.stats.change import bootstrap_change, bootstrap_median_change
from podtax_analyzer.stats.multiple import adjust
from podtax_analyzer.stats.verdict import (
    ALPHA,
    EXACT,
    INCONCLUSIVE,
    NO_DIFFERENCE,
    SET_BY_PARAMS,
    decide,
    quotient_bound,
)
from podtax_analyzer.wording import fmt_ratio, fmt_value, p_text_of, side_name

Key = tuple[str, str, str, str, str]  # cluster, node, test, params, metric


def _pair_id(base: str, new: str, key: Key) -> str:
    return hashlib.sha256("\x1f".join((base, new, *key)).encode()).hexdigest()[:12]


def _key(c: CellComparison) -> Key:
    return (getattr(c, "cluster", "local"), c.node, c.test, c.params, c.metric)


Units = dict[Key, dict[str, list[str]]]  # key -> env -> the distinct units its runs gave the metric in


def _values(con: duckdb.DuckDBPyConnection, campaign: str) -> tuple[dict[Key, dict[str, np.ndarray]], Units]:
    rows = con.execute("""
        SELECT r.cluster, r.node, r.test, r.params_key, m.name, r.env,
               list(m.value ORDER BY r.started_at NULLS LAST, r.sequence, r.run_id), list_sort(list(DISTINCT m.unit))
        FROM runs r JOIN metrics m ON m.run_id = r.run_id
        WHERE r.campaign = $1 AND r.status = 'ok' GROUP BY ALL""", [campaign]).fetchall()
    out: dict[Key, dict[str, np.ndarray]] = {}
    units: Units = {}
    for cluster, node, test, params, metric, env, vals, unit_list in rows:
        out.setdefault((cluster, node, test, params, metric), {})[env] = np.asarray(vals, dtype=float)
        units.setdefault((cluster, node, test, params, metric), {})[env] = list(unit_list)
    return out, units


def _units_differ(metric: str, named: dict[str, list[str]]) -> str | None:
    """CONFOUNDED's sentence when the compared median's runs (campaign -> its distinct units) gave ``metric`` in
    more than one unit (a parser that changed it between versions): a difference across units means nothing."""
    (a, ua), (b, ub) = named.items()
    if ua == ub and len(ua) == 1:
        return None
    return fl.units_differ(metric, (a, ua), (b, ub), "change")


def _directions_differ(b: CellComparison, n: CellComparison, names: tuple[str, str]) -> str | None:
    """CONFOUNDED's sentence when BASE's and NEW's runs disagree on whether a higher metric is better (a producer
    changed it): whether a change improved or worsened it is unknown."""
    if b.higher_is_better == n.higher_is_better:
        return None
    said = " and ".join(f"{'higher' if c.higher_is_better else 'lower'} is better in {name}"
                        for name, c in zip(names, (b, n), strict=True))
    return (f"Not comparable: {b.metric}'s runs disagree on its direction ({said}), so whether a change improved "
            f"or worsened it is unknown; no change is given.")


def _label(c: CellComparison, labels: Labels | None = None) -> str:
    """'node test params metric'; with ``labels``, the params as they read (a printed line), else whole."""
    return " ".join(x for x in (c.node, c.test, label(labels or {}, c.test, c.params), c.metric) if x)


def _flags(base: CellComparison, new: CellComparison) -> tuple[list[str], dict[str, str]]:
    names, details = [], {}
    for tag, c in (("BASE", base), ("NEW", new)):
        for f in c.flags:
            names.append(f"{tag}:{f}")
            details[f"{tag}:{f}"] = f"{tag} ({c.campaign}): {c.flag_details.get(f, f)}"
    return names, details


def _tool_changed(b: CellComparison, n: CellComparison, envs: list[str], names: tuple[str, str]) -> str | None:
    """TOOL_CHANGED's sentence when a compared environment's runs used another tool build in NEW than in BASE
    (``envs``: the environments whose figure is compared), else None. A control-plane run's version is its
    backend's, whose change may be the very point of the comparison: said as such."""
    def used(c: CellComparison, env: str) -> str | None:
        return c.host_tool_version if env == c.baseline else c.pod_tool_version if env == c.candidate else None
    changed = [(env, used(b, env), used(n, env)) for env in envs]
    changed = [(env, x, y) for env, x, y in changed if x and y and x != y]
    if not changed:
        return None
    alike: dict[tuple[str, str], list[str]] = {}  # both sides changed alike: said once
    for env, x, y in changed:
        alike.setdefault((x, y), []).append(env)
    runs = "; ".join(f"{' and '.join(envs)} runs used {x} in {names[0]} and {y} in {names[1]}"
                     for (x, y), envs in alike.items())
    template = templates.REGISTRY.get(b.test)
    if template and template.control_plane:
        return f"The backend's build changed between the campaigns: {runs}; the difference includes that change."
    return (f"The tool build changed between the campaigns: {runs}, so a difference may be the tool's, not the "
            f"platform's.")


def _envs(values: dict[str, np.ndarray]) -> set[str]:
    return {env for env, v in values.items() if len(v)}


def _no_change(b: CellComparison, n: CellComparison, vb: dict, vn: dict, names: tuple[str, str],
               what: str) -> tuple[str, str] | None:
    """(verdict, sentence) when the cell's figure cannot be compared, else None."""
    eb, en = _envs(vb), _envs(vn)
    # a side that ran but whose runs lost this metric to failed objects (a makespan): not "ran nomad" (audit)
    lost = [(name, c) for name, c in zip(names, (b, n), strict=True)
            if "ERRORS" in c.flags and not (c.n_host and c.n_pod)]
    if lost and eb != en:
        texts = [(name, c.flag_details.get("INSUFFICIENT") or c.flag_details["ERRORS"]) for name, c in lost]
        why = "; ".join(f"{name}: {text[0].lower()}{text[1:]}" for name, text in texts)
        return "not comparable", (f"Not comparable: {' and '.join(name for name, _ in lost)} ran both sides but "
                                  f"{'has' if len(lost) == 1 else 'have'} no {what}: {why}")
    if eb != en and (len(eb) == 1 or len(en) == 1):
        def ran(envs: set[str]) -> str:
            return " and ".join(sorted(envs)) or "nothing"
        return "not comparable", (f"Not comparable: {names[0]} ran {ran(eb)} and {names[1]} ran {ran(en)}, so "
                                  f"they share no {what}; run both on the same environments.")
    missing = [(name, c) for name, c in zip(names, (b, n), strict=True) if len(eb) == 2 and c.ratio is None]
    if missing:  # each campaign without its figure, each with why (a BIMODAL side's modes)
        whys = "; ".join(f"{name}: {_why_no_ratio(c)}" for name, c in missing)
        have = "has" if len(missing) == 1 else "have"
        return "inconclusive", (f"Inconclusive: {' and '.join(name for name, _ in missing)} {have} no {what} "
                                f"({whys}), so no change is computed.")
    return None


def _why_no_ratio(c: CellComparison) -> str:
    """Why a cell has no ratio: the flags that withhold it, and a BIMODAL side's two modes; a side's median of 0."""
    withheld = [f for f in c.flags if f in fl.WITHHOLD_RATIO]
    pair = (c.baseline, c.candidate)
    zero = [side_name(env, pair) for env, m in ((c.baseline, c.host_median), (c.candidate, c.pod_median)) if m == 0]
    if not withheld and zero:  # cell_sentences.zero_median
        return f"the {' and '.join(zero)} {'median is' if len(zero) == 1 else 'medians are'} 0"
    if not withheld:
        return "it could not be computed (see its warnings)"
    modes = [f"{side_name(env, pair)} modes {m}" for env, m in ((c.baseline, c.host_modes), (c.candidate, c.pod_modes))
             if m]
    return f"its flags {', '.join(withheld)} withhold it" + (f": {', '.join(modes)}" if modes else "")


def _too_few(values: dict[str, dict[str, np.ndarray]], envs: list[str], pair: tuple[str, str]) -> str | None:
    """'cmp-few has 2 host and 2 pod runs' when a compared side of a campaign (``values``: campaign ->
    env -> values) has fewer than MIN_RUNS runs, else None."""
    few = []
    for name, v in values.items():
        counts = [len(v.get(e, [])) for e in envs]
        if min(counts) < MIN_RUNS:
            runs = " and ".join(f"{n} {side_name(e, pair)}" for n, e in zip(counts, envs, strict=True))
            few.append(f"{name} has {runs} {'run' if counts == [1] else 'runs'}")
    return "; ".join(few) or None


def _fmt(x: float, ratio: bool, signed: bool = False, unit: str = "") -> str:
    """A compared figure or difference: a ratio to three decimals, else as the report prints the metric's
    values (wording.fmt_value: a count as a count)."""
    if ratio:
        return f"{x:+.3f}" if signed else fmt_ratio(x)
    return ("+" if signed and x >= 0 else "") + fmt_value(x, unit)


def _why_inconclusive(ch: dict, threshold: float) -> str:
    """Why decide() gave no verdict to an unblocked change: its interval straddles the threshold, or it
    clears it but the adjusted p-value (the correction over the campaign's cells) is not below ALPHA."""
    lo, hi, p = ch["change_ci_low"], ch["change_ci_high"], ch["p_adjusted"]
    if lo is None or hi is None or not (lo > 1.0 + threshold or hi < 1.0 - threshold):
        return "the interval is too wide"
    if p is None:
        return "no p-value could be computed"
    return (f"the interval clears the ±{threshold * 100:g}% threshold, but the adjusted p-value "
            f"({p_digits(p, '.3g')}) is not below {ALPHA:g} once corrected over the compared cells")


def _sentence(ch: dict, base: str, new: str, threshold: float) -> str:
    what, ratio = ch["compared"], ch["base_ratio"] is not None
    unit = "" if ratio else f" {ch['unit']}"
    marks = (BOUND_MARKS.get(ch["base_bound"] or "", ""), BOUND_MARKS.get(ch["new_bound"] or "", ""))
    u = ch["unit"]
    head = (f"{what} {marks[0]}{_fmt(ch['base_value'], ratio, unit=u)}{unit} in {base}, {marks[1]}"
            f"{_fmt(ch['new_value'], ratio, unit=u)}{unit} in "
            f"{new} (difference {_fmt(ch['diff'], ratio, True, u)}{unit}")
    if ch["diff_ci_low"] is not None:
        head += (f", 95% CI {_fmt(ch['diff_ci_low'], ratio, True, u)} to "
                 f"{_fmt(ch['diff_ci_high'], ratio, True, u)}")
    if not ratio and ch["change"] is not None:
        head += f"; {new}/{base} {fmt_ratio(ch['change'])}"
    if ch["p_adjusted"] is not None:
        head += f", {p_text_of(ch['p_adjusted'])} adjusted"
    elif ch["descriptive"] and ch["p_value"] is not None:
        head += f", unadjusted {p_text_of(ch['p_value'])}"
    head += ")"
    verdict = ch["verdict"]
    tool = f" {ch['tool']}" if ch["tool"] else ""
    if ch["too_few"]:
        return (f"Inconclusive (too few runs: {ch['too_few']}; at least {MIN_RUNS} a side are needed for an "
                f"interval, a p-value and a verdict): {head}." + tool)
    if verdict in ("improved", "worsened"):
        return f"{verdict.capitalize()}: {head}." + tool
    if verdict == NO_DIFFERENCE:
        return f"No detectable difference: {head}." + tool
    blocking = [f for f in ch["flags"] if f.split(":", 1)[1] in fl.BLOCKING]
    if ch["descriptive"] and not blocking:
        return (f"Descriptive, not tested ({DESCRIPTIVE_WHY}): {head}; it is in no correction family and has no "
                f"verdict of its own." + tool)
    why = (f"flags {', '.join(blocking)} withhold the verdict" if blocking else ch["bound_why"]
           or _why_inconclusive(ch, threshold))
    return f"Inconclusive ({why}): {head}." + tool


def compare_campaigns(con: duckdb.DuckDBPyConnection, base: str, new: str, *, threshold: float = 0.01,
                      correction: str = "holm", seed: int = 0) -> CampaignChange:
    """Raises UnknownCampaign naming the first campaign that is not stored."""
    for name in (base, new):
        if not campaign_exists(con, name):
            raise UnknownCampaign(name)
    reports = {name: compare_campaign(con, name, threshold=threshold, correction=correction, seed=seed)
               for name in (base, new)}
    cells = {name: {_key(c): c for c in rep.cells} for name, rep in reports.items()}
    loaded = {name: _values(con, name) for name in (base, new)}
    values = {name: v for name, (v, _) in loaded.items()}
    keys = [k for k in cells[base] if k in cells[new]]
    starts = {name: provision_starts.provision_starts(con, name) for name in (base, new)}
    rows = []
    for key in keys:
        b, n = cells[base][key], cells[new][key]
        vb, vn = values[base].get(key, {}), values[new].get(key, {})
        try:
            pair = sides.pair(_envs(vb) | _envs(vn))
        except ValueError:
            pair = (b.baseline, b.candidate)
        one = sorted(_envs(vb) & _envs(vn)) if _envs(vb) == _envs(vn) and len(_envs(vb)) == 1 else []
        what = (f"{one[0]} median ({b.unit})" if one else
                f"{pair[1]}/{pair[0]} ratio".replace("kubernetes/host", "pod/host"))
        flags, details = _flags(b, n)
        if one:  # a campaign's INSUFFICIENT is of its ratio (the side it did not run: 0 runs); the one side compared
            # is _too_few's, with its own sentence, so it withholds no change of that side's median
            flags = [f for f in flags if not f.endswith(":INSUFFICIENT")]
            details = {k: v for k, v in details.items() if not k.endswith(":INSUFFICIENT")}
        in_units = {name: loaded[name][1].get(key, {}).get(one[0], []) for name in (base, new)} if one else {}
        mixed = _units_differ(key[4], in_units) if one else None
        way = _directions_differ(b, n, (base, new)) or provision_starts.changed(starts, key, pair)
        if way and not mixed:  # a change's direction (improved, worsened) would be a guess: CONFOUNDED on NEW,
            mixed = way  # or on BASE when the reason is BASE's own (its runs mixed the provision starts)
            tag, name = ("BASE", base) if way.startswith(f"Not comparable in {base}:") else ("NEW", new)
            if f"{tag}:CONFOUNDED" not in flags:  # the campaign's own CONFOUNDED says it already, with its details
                flags = [*flags, f"{tag}:CONFOUNDED"]
                details = {**details, f"{tag}:CONFOUNDED": f"{tag} ({name}): {way}"}
        elif mixed:  # no difference across units: CONFOUNDED on the campaign mixing them, else on NEW (which changed)
            what = f"{one[0]} median ({' in '.join((' + '.join(in_units[base]), base))}, " \
                   f"{' in '.join((' + '.join(in_units[new]), new))})"
            for tag, name in [(t, c) for t, c in (("BASE", base), ("NEW", new)) if len(in_units[c]) > 1] or \
                    [("NEW", new)]:
                if f"{tag}:CONFOUNDED" not in flags:  # the cell's own CONFOUNDED (4cda361) may be there already
                    flags.append(f"{tag}:CONFOUNDED")
                details[f"{tag}:CONFOUNDED"] = f"{tag} ({name}): {mixed}"
        tool = _tool_changed(b, n, one or list(pair), (base, new))
        if tool:  # said in every form (flags, details, sentence), withholding nothing (module doc)
            flags.append("NEW:TOOL_CHANGED")
            details["NEW:TOOL_CHANGED"] = f"NEW ({new}): {tool}"
        est: dict[str, float | None] = dict(diff=None, diff_ci_low=None, diff_ci_high=None, change=None,
                                            change_ci_low=None, change_ci_high=None, p_value=None)
        cell_seed = int(np.random.SeedSequence([seed, int(b.id, 16), int(n.id, 16)]).generate_state(1)[0])
        usable = all(len(v.get(e, [])) > 0 for v in (vb, vn) for e in pair)
        too_few = _too_few({base: vb, new: vn}, one or list(pair), pair)
        figures: tuple[float | None, float | None] = (b.ratio, n.ratio)
        # a metric the parameters fix (the report's verdict): nothing to compare, in no family
        fixed = next(((SET_BY_PARAMS, c.sentence) for c in (b, n) if c.verdict == SET_BY_PARAMS), None)
        if one and not fixed and not mixed:
            figures = (float(np.median(vb[one[0]])), float(np.median(vn[one[0]])))
            est = bootstrap_median_change(vb[one[0]], vn[one[0]], seed=cell_seed)
        elif b.ratio is not None and n.ratio is not None and usable and not mixed:
            est = bootstrap_change((vb[pair[0]], vb[pair[1]]), (vn[pair[0]], vn[pair[1]]), seed=cell_seed)
        if too_few:  # the report's minimum: point figures only (module doc)
            est.update(diff_ci_low=None, diff_ci_high=None, change_ci_low=None, change_ci_high=None, p_value=None)
        rows.append(dict(
            compared=what, base_value=figures[0], new_value=figures[1], too_few=too_few,
            base_bound=way_of(bound_of(b, one[0] if one else None)),
            new_bound=way_of(bound_of(n, one[0] if one else None)),
            unchanged=fixed or (("not comparable", mixed) if mixed else None if one else
                                _no_change(b, n, vb, vn, (base, new), what)),
            id=_pair_id(base, new, key), node=key[1], test=key[2], params=key[3],
            metric=key[4], unit=b.unit, higher_is_better=b.higher_is_better, primary=b.primary, sides=pair,
            base_cell=b.id, new_cell=n.id, n_base=b.n_host + b.n_pod, n_new=n.n_host + n.n_pod,
            base_ratio=b.ratio, new_ratio=n.ratio, flags=flags, flag_details=details, **est,
            # change = NEW's figure / BASE's: a figure that is only a lower or upper bound bounds it (stats/verdict.py)
            bound=quotient_bound(bound_of(n, one[0] if one else None), bound_of(b, one[0] if one else None)),
            bounded={base: b, new: n}, one=one[0] if one else None, tool=tool,
            descriptive=is_descriptive(key[2], key[4]), p_adjusted=None))  # descriptive: in neither family
    for family in (True, False):
        idx = [i for i, r in enumerate(rows) if r["primary"] == family and not r["descriptive"]]
        for i, p in zip(idx, adjust([rows[i]["p_value"] for i in idx], correction), strict=True):
            rows[i]["p_adjusted"] = p
    out = []
    for r in rows:
        blocked = any(f.split(":", 1)[1] in fl.BLOCKING for f in r["flags"])
        args = (r["change"], r["change_ci_low"], r["change_ci_high"], r["p_adjusted"], r["higher_is_better"])
        bound, bounded, one = r.pop("bound"), r.pop("bounded"), r.pop("one")
        v, free = (decide(*args, threshold=threshold, blocked=blocked, bound=b) for b in (bound, EXACT))
        if r["descriptive"]:  # no verdict of its own
            v = free = INCONCLUSIVE
        r["verdict"] = WORDS.get(v, "inconclusive")
        r["bound_why"] = bound_why_of(bounded, one, bound, free) if v != free and not blocked else None
        unchanged = r.pop("unchanged")
        if unchanged:
            r["verdict"], r["sentence"] = unchanged
        else:
            r["sentence"] = _sentence(r, base, new, threshold)
        for k in ("too_few", "bound_why", "tool"):
            r.pop(k)
        out.append(CellChange(**r))
    # once for every view of the comparison (its table, its 'only in' cells): both campaigns' cells
    labels = params_labels((c.test, c.params) for side in cells.values() for c in side.values())

    def unmatched(a: str, b: str, shown: Labels | None = None) -> list[str]:
        return [_label(c, shown) for k, c in cells[a].items() if k not in cells[b]]

    return CampaignChange(base=base, new=new, threshold=threshold, correction=correction, cells=out,
                          only_in_base=unmatched(base, new), only_in_new=unmatched(new, base), params_labels=labels,
                          only_in_base_labels=unmatched(base, new, labels),
                          only_in_new_labels=unmatched(new, base, labels))
