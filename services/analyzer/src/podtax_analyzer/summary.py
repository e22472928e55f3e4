"""Cross-node summaries: geometric mean of per-node ratios over clean cells only.

One summary per (test, params, metric). A cell is clean when it has a ratio with an interval and
carries no flag other than OUTLIERS (outliers are reported in the table and the median resists
them; the sentence names the nodes included despite them), unless some of its outliers are a second group of
one side's runs (stats.outliers.is_second_group: 2 of 12 pod runs 30% slower is a recurring slowdown
the median hides, not noise, so the cell is left out, named "OUTLIERS: a second group of runs") or each side's one
outlier lies toward the other side's main runs and the cell was read at each level (CellComparison.crossed_lone_runs:
one node name over two machines run 9/1 and 1/9 gave a ratio of 0.350, the machine gap, which moved the mean of 0.350,
1.000 and 1.000 to 0.705; named "OUTLIERS: one run a side toward the other side's level"), and
IMPORTED when nothing in the cell was
mixed: every run of both its sides came from `podtax import`, so its two sides were recorded the same
way and its ratio compares like with like (the sentence names those nodes too). A mixed cell, where
podtax made some of its runs and others were imported (on one side or across the two), is left out:
the imported runs were not interleaved or spaced with podtax's, so the ratio may compare two setups.
Whether other nodes' cells were imported does not matter: each cell's ratio is within its node.
The sentence names the nodes included, each node's ratio, and each excluded node with its reasons; it
cites every cell it mentions. Every number in it is a cell value formatted as in the table, a count of
cited cells, the geometric mean of the cited clean cells' ratios (and that mean's percentage), or the ends of
that mean's interval (``mean_interval``).

The mean is never stated alone: a point figure reads as a finding. With no effect planted and one noisy node
of 4, the mean alone read "pod X% slower/faster" with X >= 1% in 21 of 30 campaigns while no cell claimed
anything. It is given with its interval, and the change ("pod 10.0% slower") only when the interval lies wholly
beyond the no-difference band (1 - t to 1 + t) on one side and some clean node's own verdict says that change
(``mean_claim``); else the sentence says that no difference across nodes can be claimed, or, when the interval
lies within the band and no clean node's own verdict is faster or slower, that any difference across nodes is
smaller than the practical threshold.

When two clean nodes' intervals do not overlap, the nodes disagree: a mean of 0.80, 1.00 and 1.00
reads as a 7% tax that no node has. The sentence then leads with the disagreement, naming the two
nodes whose intervals lie furthest apart, and says the mean describes none of them
(``nodes_disagree``); the mean keeps its figure and interval but states no change (``geomean_change`` null).

A noisy node's ratio moves the unweighted mean as much as a steady node's: with three nodes at 0.95 within
1% and one at 0.85 with an interval of 0.58 to 1.19, the mean read 0.925 (pod 7.5% slower). A clean cell whose
interval (in log terms) is more than ``WIDE`` times as wide as the median of the others' is named, with its
interval, and the sentence gives the geometric mean without it too (``wide_nodes``). The others' width counts as
at least the no-difference band's (1 - t to 1 + t): an interval that narrow is as steady as a verdict can tell,
and beside intervals of width 0 (identical medians, 1.000 to 1.000) any interval would be "wide".

A clean cell whose sentence carries a note of what its values cannot show (sequence.py: its sides not
interleaved, its runs on several kernels, some of them failed) is counted, and named with its notes' names.
"""

from __future__ import annotations

import math

import numpy as np
from podtax.param_labels import Labels, label, params_labels

from podtax_analyzer.report_models import CellComparison, SummaryItem
from podtax_analyzer.sequence import NOTES
from podtax_analyzer.stats.outliers import is_second_group
from podtax_analyzer.stats.verdict import FASTER, SET_BY_PARAMS, SLOWER, change_phrase, direction
from podtax_analyzer.wording import fmt_ratio, plural, ratio_name, side_name

TOLERATED = frozenset({"OUTLIERS"})
WIDE = 4.0  # a clean cell's interval this many times as wide as the others' (their median) is a noisy node's
IMPORTED = "IMPORTED"
LONE_RUNS = "OUTLIERS: one run a side toward the other side's level"


def tolerated(c: CellComparison, only_imported: frozenset[str] = frozenset()) -> frozenset[str]:
    """The flags a clean cell may carry: OUTLIERS, and IMPORTED when ``c`` is in ``only_imported`` (the ids
    of the cells every run of which was imported, comparisons.only_imported)."""
    return TOLERATED | {IMPORTED} if c.id in only_imported else TOLERATED


def is_clean(c: CellComparison, only_imported: frozenset[str] = frozenset()) -> bool:
    return (not (set(c.flags) - tolerated(c, only_imported)) and c.ratio is not None and c.ci_low is not None
            and c.ratio > 0 and not second_group(c) and not c.crossed_lone_runs)


def second_group(c: CellComparison) -> bool:
    """The cell's outliers marked a second group (OutlierOut.group) are all of one side and form one there (a
    recurring slowdown or speed-up the median does not show), as the cell's own sentence says
    (outlier_flags.second_group)."""
    grouped = [o for o in c.outliers if o.group]
    envs = {o.env for o in grouped}
    if not envs:
        return False
    for env in envs:  # a group on each side (outlier_outlier_flags.second_group says both): each must form one
        mid = c.host_median if env == c.baseline else c.pod_median
        if mid is None or not mid > 0 or not is_second_group(np.array([o.value for o in grouped if o.env == env]), mid):
            return False
    return True


def _names(c: CellComparison) -> tuple[str, str]:
    pair = (c.baseline, c.candidate)
    return side_name(pair[0], pair), side_name(pair[1], pair)


def geomean(ratios: list[float]) -> float:
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def mean_interval(clean: list[CellComparison]) -> tuple[float, float]:
    """[geomean(ci_low), geomean(ci_high)] of the clean cells: conservative. If every node's true ratio lies in
    its interval, their geometric mean lies in this one (the geometric mean is monotone in each ratio), so its
    coverage is at least that of all the nodes' intervals at once. It is not a confidence interval of a mean
    over nodes: it does not narrow as nodes are added (it is about these nodes, not nodes in general) and it
    pools no runs. A cell's lower end of 0 or less makes the lower end 0."""
    low = 0.0 if any(c.ci_low <= 0 for c in clean) else geomean([c.ci_low for c in clean])
    return low, geomean([c.ci_high for c in clean])


def mean_claim(clean: list[CellComparison], threshold: float) -> str | None:
    """"faster"/"slower" when the mean's interval (mean_interval) lies wholly beyond the no-difference band
    (1 - threshold to 1 + threshold) on one side and some clean cell's own verdict says that change; "within"
    when the interval lies inside the band and no clean cell's verdict is faster or slower; else None (no
    difference across nodes can be claimed), and None when the nodes disagree (_apart: the mean describes none)."""
    if _apart(clean):
        return None
    low, high = mean_interval(clean)
    if low > 1 + threshold or high < 1 - threshold:
        way = direction(low if low > 1 + threshold else high, clean[0].higher_is_better)
        return way if any(c.verdict == way for c in clean) else None
    inside = 1 - threshold <= low and high <= 1 + threshold
    return "within" if inside and not any(c.verdict in (FASTER, SLOWER) for c in clean) else None


def _mean_words(clean: list[CellComparison], threshold: float) -> str:
    """ "0.900 (0.883 to 0.917, pod 10.0% slower)", or "0.979 (0.910 to 1.051): no difference across nodes can be
    claimed" (mean_claim)."""
    g = geomean([c.ratio for c in clean])
    low, high = mean_interval(clean)
    span = f"{fmt_ratio(g)} ({fmt_ratio(low)} to {fmt_ratio(high)}"
    claim = mean_claim(clean, threshold)
    if claim == "within":
        return f"{span}): any difference across nodes is smaller than the practical threshold"
    if claim is None:
        return f"{span}): no difference across nodes can be claimed"
    c = clean[0]
    return f"{span}, {change_phrase(g, c.higher_is_better, _names(c), c.unit)})"


def _exclusion_reason(c: CellComparison, only_imported: frozenset[str]) -> list[str]:
    ok = tolerated(c, only_imported)
    named = [f"{f} mixed with runs podtax made" if f == IMPORTED else f for f in c.flags if f not in ok]
    if second_group(c):
        named.append("OUTLIERS: a second group of runs")
    elif c.crossed_lone_runs:  # 9/1 and 1/9 runs on two machines: its ratio is the machine gap (0.350), no pod tax
        named.append(LONE_RUNS)
    if c.verdict == SET_BY_PARAMS:  # the parameters fix the metric: nothing to compare
        return [SET_BY_PARAMS, *named]
    if c.verdict == "not comparable":  # runs on one side only
        return ["not comparable", *named]
    if c.ratio is None:  # a side's median of 0 (cell_sentences.zero_median): a verdict, no ratio
        return named or ["no ratio"]
    if c.ratio <= 0:  # a negative median on one side (a median of 0 gives no ratio): no logarithm for the mean
        return named or ["a negative ratio, which no geometric mean can take"]
    return named or ["no interval"]


def summarize(cells: list[CellComparison], only_imported: frozenset[str] = frozenset(),
              threshold: float = 0.01, labels: Labels | None = None) -> list[SummaryItem]:
    """One item per (test, params, metric). With more than one cluster a node is named cluster/node.
    only_imported: ids of the cells made entirely of imported runs (their IMPORTED flag is tolerated);
    threshold: the campaign's practical threshold (the no-difference band, see wide_nodes); labels: the report's
    params labels (CampaignReport.params_labels; by default those of ``cells``)."""
    several = len({c.cluster for c in cells}) > 1

    def where(c: CellComparison) -> str:
        return f"{c.cluster}/{c.node}" if several else c.node

    groups: dict[tuple[str, str, str], list[CellComparison]] = {}
    for c in cells:
        groups.setdefault((c.test, c.params, c.metric), []).append(c)
    labels = params_labels((c.test, c.params) for c in cells) if labels is None else labels
    out = []
    for (test, params, metric), group in groups.items():
        group = sorted(group, key=lambda c: (c.node, c.cluster))
        clean = [c for c in group if is_clean(c, only_imported)]
        excluded = {where(c): _exclusion_reason(c, only_imported) for c in group if not is_clean(c, only_imported)}
        what = f"{test} {label(labels, test, params)} {metric}".replace("  ", " ")
        if any(c.descriptive for c in group):  # kube-burner's min/avg: in no correction family
            what += " (descriptive, not tested)"
        apart = _apart(clean)
        if clean:
            g = geomean([c.ratio for c in clean])
            nodes = ", ".join(where(c) for c in clean)
            per_node = "; ".join(f"{where(c)} {fmt_ratio(c.ratio)}" for c in clean)
            mean = (f"the geometric mean of the {ratio_name((clean[0].baseline, clean[0].candidate))} ratios is "
                    f"{_mean_words(clean, threshold)}")
            low_g, high_g = mean_interval(clean)
            if apart:
                low, high = apart
                sentence = (f"{what}: the {plural(len(clean), 'clean node')} disagree: {where(high)}'s interval "
                            f"({fmt_ratio(high.ci_low)} to {fmt_ratio(high.ci_high)}) and {where(low)}'s "
                            f"({fmt_ratio(low.ci_low)} to {fmt_ratio(low.ci_high)}) do not overlap, so no single "
                            f"figure stands for them; per node: {per_node}. Across them ({nodes}) {mean}; that mean "
                            f"describes none of them: read the nodes one by one.")
            else:
                sentence = f"{what}: across {plural(len(clean), 'clean node')} ({nodes}) {mean}; per node: {per_node}."
            if wide := wide_nodes(clean, threshold):
                rest = [c for c in clean if c not in wide]
                them = " and ".join(f"{where(c)}'s ({fmt_ratio(c.ci_low)} to {fmt_ratio(c.ci_high)})" for c in wide)
                one = len(wide) == 1
                if one:  # "node-3's interval (0.582 to 1.187) is"
                    them = f"{where(wide[0])}'s interval ({fmt_ratio(wide[0].ci_low)} to {fmt_ratio(wide[0].ci_high)})"
                sentence += (f" {them} {'is' if one else 'intervals are'} over {WIDE:g} times as wide as the "
                             f"other nodes': a noisy node's ratio moves the mean as much as a steady one's; without "
                             f"{'it' if one else 'them'} the geometric mean is {_mean_words(rest, threshold)}.")
            outlying = [where(c) for c in clean if "OUTLIERS" in c.flags]
            if outlying:
                sentence += f" Included despite reported outliers (the median resists them): {', '.join(outlying)}."
            noted = {where(c): [n for n in NOTES if any(w.startswith(f"{n}:") for w in c.warnings)] for c in clean}
            if noted := {node: names for node, names in noted.items() if names}:
                sentence += (" Included with a note of what their values cannot show (see each cell): "
                             + "; ".join(f"{node} ({', '.join(names)})" for node, names in noted.items()) + ".")
            imported = [where(c) for c in clean if IMPORTED in c.flags]
            if imported:
                sentence += (f" Every run of {', '.join(imported)} was imported from logs recorded outside podtax "
                             f"(`podtax import`): check both sides ran the same setup.")
        else:
            g = low_g = high_g = None
            sentence = f"{what}: no clean cell, so no figure across nodes."
        if excluded:
            reasons = "; ".join(f"{node} ({', '.join(r)})" for node, r in excluded.items())
            sentence += f" Excluded: {reasons}."
        out.append(SummaryItem(sentence=sentence, cells=[c.id for c in group], test=test, params=params,
                               metric=metric, geomean_ratio=g, geomean_ci_low=low_g, geomean_ci_high=high_g,
                               geomean_change=mean_claim(clean, threshold) if clean else None,
                               nodes_included=[where(c) for c in clean],
                               nodes_excluded=excluded, nodes_disagree=apart is not None))
    return out


def wide_nodes(clean: list[CellComparison], threshold: float = 0.01) -> list[CellComparison]:
    """The clean cells whose interval, in log terms, is more than WIDE times the median width of the other clean
    cells' (a noisy node), that width taken as at least the no-difference band's (1 - threshold to
    1 + threshold); none with fewer than 2 clean cells."""
    if len(clean) < 2:
        return []
    band = math.log((1 + threshold) / (1 - threshold))
    width = {c.id: math.log(c.ci_high / c.ci_low) if c.ci_low > 0 else math.inf for c in clean}
    return [c for c in clean
            if width[c.id] > WIDE * max(band, float(np.median([width[o.id] for o in clean if o is not c])))]


def _apart(clean: list[CellComparison]) -> tuple[CellComparison, CellComparison] | None:
    """The clean cell whose interval ends lowest and the one whose interval starts highest, when those
    intervals do not overlap (the nodes disagree); else None."""
    if len(clean) < 2:
        return None
    low = min(clean, key=lambda c: c.ci_high)
    high = max(clean, key=lambda c: c.ci_low)
    return (low, high) if high.ci_low > low.ci_high else None
