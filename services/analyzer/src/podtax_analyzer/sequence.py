"""What a cell's values cannot show of its runs: the sides ran one after the other, on several kernels, or
some runs failed.

The runner interleaves a cell's two sides so that whatever changes over a campaign (an update, another
tenant's load, the room's temperature) falls on both alike. Runs imported from old logs, or a side re-run
on another day, can instead form two blocks in time: every run of one side started before the first run of
the other (or, overlapping a little, at least MOSTLY = 90% of the run pairs ran in one order). A step
between the blocks then reads as the pod's effect, and nothing in the values tells them apart (DRIFT sees
only a change within a side). Likewise a kernel upgrade during a campaign: the runs'
provenance names more than one kernel (a side mixing tool builds is CONFOUNDED; a kernel is the machine's).
And runs that failed (a timeout, a parse failure) leave no value: a side's median is of the runs that finished,
which leaves the slowest out when they failed for being slow; the campaign's warnings counted them, the cell
did not. Such a cell keeps its figures, and its sentence and warnings say so, with both time spans, each
kernel's runs per side or each side's failed runs by reason (a cell whose flags withhold its ratio and verdict
has no figure to say it of). A verdict of a cell whose sides ran one after the other (or mostly) stands only when
the candidate's effect net of a steady change over the runs (stats/blocked.py, a trend over both sides' runs in
time order) gives it too (stats.verdict.decide on that interval); else it is withheld (inconclusive) and said why.
The campaign's warnings of failed runs come from the same query (failed_warnings)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import duckdb
import numpy as np
from podtax.flags import ORDER
from podtax.param_labels import Labels, label

from podtax_analyzer.report_models import CellComparison
from podtax_analyzer.stats.blocked import adjusted, without
from podtax_analyzer.stats.verdict import FASTER, INCONCLUSIVE, NO_DIFFERENCE, SLOWER, decide
from podtax_analyzer.wording import fmt_pct, fmt_ratio, plural, side_name

MIN_RUNS = 2  # one run a side is always "before" the other: nothing to say
# how each note starts (each sentence below begins with its name): the cross-node summary names the nodes it
# includes with such a note (summary.py)
NOTES = ("Not interleaved", "Mostly not interleaved", "Mixed kernels", "Failed runs")
NOT_INTERLEAVED, MOSTLY_NOT_INTERLEAVED, MIXED_KERNELS, FAILED_RUNS = NOTES
SEQUENTIAL = "SEQUENTIAL"  # the flag of a verdict trend_check withholds (podtax.flags.BLOCKING)
MOSTLY = 0.9  # this share of (baseline, candidate) run pairs in one order: mostly one side after the other

# per cell and side: first and last start (microseconds since the epoch), runs and their starts, whose ranks in time
# among the cell's runs (ties at their average rank) give the Mann-Whitney U of the share of run pairs in each order
# (spans). The ranks are counted in numpy: a window over the runs partitioned by the four key strings was most of
# the comparison's SQL time (sorting on the strings), and the same figures come out (half-integers, summed exactly)
_SPANS_SQL = """
SELECT cluster, node, test, params_key, env, epoch_us(min(started_at)) AS first, epoch_us(max(started_at)) AS last,
       count(*) AS n, list(epoch_us(started_at)) AS starts
FROM runs WHERE campaign = $1 AND status = 'ok' AND started_at IS NOT NULL
GROUP BY ALL
"""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# env -> first start, last start, runs, rank sum, the runs' starts (microseconds since the epoch; time_ranks of a
# cell's sides gives their places among the cell's runs, only for the few cells trend_check fits)
Span = tuple[datetime, datetime, int, float, np.ndarray]
Spans = dict[tuple[str, str, str, str], dict[str, Span]]


def rank_sums(sides: list[np.ndarray]) -> list[float]:
    """Each side's sum of its runs' ranks in time among its cell's runs (``sides``: the start times of each side of
    one cell), ties at their average rank: SQL's (rank() + count(*)) / 2 over the cell's runs ordered by start, where
    rank() is 1 + the runs started before and count(*) the runs started before or with it. Counted in integers."""
    every = np.sort(np.concatenate(sides))
    return [(int(np.searchsorted(every, t, side="left").sum()) + len(t)
             + int(np.searchsorted(every, t, side="right").sum())) / 2 for t in sides]


def time_ranks(sides: list[np.ndarray]) -> list[np.ndarray]:
    """Each side's runs' places among its cell's runs by start (0 first; runs started together share one),
    ascending (``sides``: the start times of each side of one cell)."""
    every = np.sort(np.concatenate(sides))
    return [np.searchsorted(every, np.sort(t), side="left") for t in sides]


def spans_of(con: duckdb.DuckDBPyConnection, campaign: str) -> Spans:
    """(cluster, node, test, params) -> env -> (first start, last start, runs, rank sum, starts) of the ok runs
    with a start."""
    res = con.execute(_SPANS_SQL, [campaign]).fetchnumpy()
    keys = list(zip(*(res[k].tolist() for k in ("cluster", "node", "test", "params_key")), strict=True))
    starts: dict[tuple[str, str, str, str], list[np.ndarray]] = {}
    for key, t in zip(keys, res["starts"], strict=True):
        starts.setdefault(key, []).append(np.asarray(t, dtype=np.int64))
    sums = {key: iter(zip(rank_sums(sides), sides, strict=True)) for key, sides in starts.items()}
    spans: Spans = {}
    for key, env, first, last, n in zip(keys, res["env"].tolist(), res["first"].tolist(), res["last"].tolist(),
                                        res["n"].tolist(), strict=True):  # each cell's sides in the order listed
        spans.setdefault(key, {})[env] = (_EPOCH + timedelta(microseconds=first),
                                          _EPOCH + timedelta(microseconds=last), n, *next(sums[key]))
    return spans


_KERNELS_SQL = """
SELECT r.cluster, r.node, r.test, r.params_key, r.env, l.provenance->>'kernel' AS kernel, count(*)
FROM runs r JOIN raw_logs l ON l.run_id = r.run_id
WHERE r.campaign = $1 AND r.status = 'ok' AND l.provenance->>'kernel' IS NOT NULL
GROUP BY ALL ORDER BY kernel, r.env
"""

# a failed run and whether its retry (the runner's plan.retry: attempt + 1, run id '<base>-a<attempt>') finished; a run
# stopped by its campaign's cancel (reason cancelled: a host, pod or control-plane run in flight) is no failure, as the
# runner counts it
_FAILED_SQL = """
SELECT f.cluster, f.node, f.test, f.params_key, f.env, coalesce(f.failure_reason, 'unknown') AS reason,
       count(*) AS n, count(o.run_id) AS retried, min(f.failure_detail)
FROM runs f
LEFT JOIN runs o ON o.campaign = f.campaign AND o.status = 'ok' AND o.attempt = f.attempt + 1
     AND o.run_id = (CASE WHEN f.attempt > 1 THEN regexp_replace(f.run_id, '-a[0-9]+$', '') ELSE f.run_id END)
                    || '-a' || o.attempt
WHERE f.campaign = $1 AND f.status = 'failed' AND f.failure_reason IS DISTINCT FROM 'cancelled'
GROUP BY ALL ORDER BY n DESC, reason
"""
MOST_WARNED = 20  # campaign warnings of failed runs, most first


class FailedRuns(NamedTuple):
    """The failed runs of one side of a (cluster, node, test, params) that failed for one reason: how many, how
    many of them the runner then retried successfully, and one failure's detail."""

    cluster: str
    node: str
    test: str
    params_key: str
    env: str
    reason: str
    n: int
    retried: int
    detail: str | None


def failed_runs(con: duckdb.DuckDBPyConnection, campaign: str) -> list[FailedRuns]:
    """The failed runs of ``campaign`` by cell side and reason, most first (one query for the cells' notes and
    the campaign's warnings)."""
    return [FailedRuns(*row) for row in con.execute(_FAILED_SQL, [campaign]).fetchall()]


def _retried(n: int) -> str:
    return f", {n} of them then retried successfully" if n else ""


def failed_warnings(failed: list[FailedRuns], labels: Labels) -> list[str]:
    """One sentence per (node, test, params, side, reason) of the failed runs (clusters together), most first,
    with how many were retried successfully as the cell's note says: a cell whose runs all failed otherwise
    reads as "more runs are needed" (audit: every run timed out against a storage class that did not exist,
    and the report never said so). ``labels``: the report's params labels (CampaignReport.params_labels, over its
    cells and these failed runs), so a failed run's params read as its cell's heading."""
    merged: dict[tuple[str, str, str, str, str], tuple[int, int, str | None]] = {}
    for f in failed:
        n, retried, detail = merged.get(key := (f.node, f.test, f.params_key, f.env, f.reason), (0, 0, None))
        merged[key] = (n + f.n, retried + f.retried, min(filter(None, (detail, f.detail)), default=None))
    most = sorted(merged.items(), key=lambda kv: (-kv[1][0], kv[0]))[:MOST_WARNED]
    return [f"{n} failed {env} run{'s' if n > 1 else ''} of "
            f"{' '.join(filter(None, (test, label(labels, test, params))))} on {node}: {reason}"
            + (f" ({detail[:300]})" if detail else "") + _retried(retried)
            for (node, test, params, env, reason), (n, retried, detail) in most]


def _when(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def note(c: CellComparison, spans: dict[str, Span]) -> str | None:
    """The sentence for cell ``c`` when its sides ran one after the other, or mostly (``spans``: env -> first
    start, last start, runs, rank sum), else None. A cell with neither a ratio nor a direction has no figure
    the order could bias."""
    base, cand = spans.get(c.baseline), spans.get(c.candidate)
    if base is None or cand is None or min(base[2], cand[2]) < MIN_RUNS or (c.ratio is None and c.direction is None):
        return None
    pair = (c.baseline, c.candidate)
    (first, a), (then, b) = sorted(((c.baseline, base), (c.candidate, cand)), key=lambda e: e[1][0])
    name_a, name_b = side_name(first, pair), side_name(then, pair)
    effect = (f"as the {side_name(c.candidate, pair)}'s effect; run both sides interleaved to tell "
              f"them apart.")
    if a[1] < b[0]:
        return (f"{NOT_INTERLEAVED}: every {name_a} run ({plural(a[2], 'run')}, {_when(a[0])} to {_when(a[1])} UTC) "
                f"started before the first {name_b} run ({plural(b[2], 'run')}, {_when(b[0])} to {_when(b[1])} "
                f"UTC), so a change of the machine between them would read {effect}")
    later = (float(b[3]) - b[2] * (b[2] + 1) / 2) / (a[2] * b[2])  # share of pairs whose `then` run started later
    if later < MOSTLY:
        return None
    return (f"{MOSTLY_NOT_INTERLEAVED}: in {later:.0%} of the ({name_a}, {name_b}) run pairs the {name_a} run started "
            f"first ({name_a} runs {_when(a[0])} to {_when(a[1])} UTC, {name_b} runs {_when(b[0])} to {_when(b[1])} "
            f"UTC), so a change of the machine over the campaign would read mostly {effect}")


def kernel_note(c: CellComparison, kernels: dict[str, dict[str, int]]) -> str | None:
    """The sentence for cell ``c`` when its runs' provenance names more than one kernel (``kernels``: kernel ->
    env -> runs), else None."""
    if len(kernels) < 2 or (c.ratio is None and c.direction is None):
        return None
    pair = (c.baseline, c.candidate)
    each = "; ".join(f"{k}: " + " and ".join(plural(n, side_name(env, pair) + " run") for env, n in by_env.items())
                     for k, by_env in kernels.items())
    split = all(len(by_env) == 1 for by_env in kernels.values())  # no kernel ran both sides
    why = (f"no kernel ran both sides, so the ratio compares kernels as much as {side_name(c.baseline, pair)} and "
           f"{side_name(c.candidate, pair)}" if split else "the machine changed during the campaign")
    return (f"{MIXED_KERNELS}: this cell's runs ran {len(kernels)} kernels ({each}): {why}; compare the runs of one "
            f"kernel (a campaign per kernel) to know the {side_name(c.candidate, pair)}'s own effect.")


def failed_note(c: CellComparison, failed: dict[str, dict[str, tuple[int, int]]]) -> str | None:
    """The sentence for cell ``c`` when runs of its sides failed (``failed``: env -> reason -> (runs, of them
    retried successfully)), else None: each side's median is of the runs that finished, retries included. A
    failed attempt counts as a run, as `podtax campaign status` counts it ("12 done, 1 failed")."""
    if c.ratio is None and c.direction is None:
        return None
    pair = (c.baseline, c.candidate)
    parts, missing = [], False
    for env, done in ((c.baseline, c.n_host), (c.candidate, c.n_pod)):
        if reasons := failed.get(env):
            k, name = sum(n for n, _ in reasons.values()), side_name(env, pair)
            why = ", ".join(f"{reason}: {n}" for reason, (n, _) in reasons.items())
            retried = sum(r for _, r in reasons.values())
            missing = missing or retried < k
            parts.append(f"{k} of {plural(k + done, name + ' run')} failed ({why}){_retried(retried)}, so the {name} "
                         f"median is of the {done} that finished")
    if not parts:
        return None
    slow = (" If they failed for being slow (a timeout), the slowest runs are missing and that side's median looks "
            "better than its runs were.") if missing else ""  # every failed run retried: none is missing
    return f"{FAILED_RUNS}: {'; '.join(parts)}.{slow}"


def trend_check(c: CellComparison, spans: dict[str, Span], values: dict[str, np.ndarray], threshold: float
                ) -> tuple[str | None, str | None]:
    """The sentence withholding the verdict of cell ``c``, whose sides ran one after the other (or mostly), when
    its effect net of a steady change over the runs (stats/blocked.py) does not give the same verdict; else None
    (``values``: env -> the side's values in run order; a side whose runs and values differ in number is not
    checked). When the verdict stands, the second item is the sentence giving the net ratio as a cross-check of the
    verdict, not a better figure (a warm-up in each block is no steady trend: r3's planted campaigns, its interval
    covered the truth in 10 of 26), else None."""
    if c.verdict not in (FASTER, SLOWER, NO_DIFFERENCE) or not {c.baseline, c.candidate} <= values.keys():
        return None, None
    ranks = dict(zip(spans, time_ranks([s[4] for s in spans.values()]), strict=True))
    (base, base_t), (cand, cand_t) = (without(values[env], ranks[env], [o.value for o in c.outliers if o.env == env])
                                      for env in (c.baseline, c.candidate))  # the fit leaves the flagged outliers out
    fit = adjusted(base, base_t, cand, cand_t)
    if fit is None:
        return None, None
    pair = (c.baseline, c.candidate)
    net = (f"the {side_name(c.candidate, pair)}/{side_name(c.baseline, pair)} ratio is {fmt_ratio(fit.ratio)} (95% "
           f"interval {fmt_ratio(fit.low)} to {fmt_ratio(fit.high)})")
    if decide(*fit[:3], c.p_adjusted, c.higher_is_better, threshold=threshold) == c.verdict:
        return None, (f"Net of a steady change over the runs (a cross-check: a trend fitted over both sides' runs "
                      f"in time order, its p = {fit.trend_p:.2g}), {net}, which gives the same verdict. It assumes "
                      f"the change was steady across both sides (a warm-up at the start of each side is not), so it "
                      f"checks the verdict, not the figures above.")
    return (f"Inconclusive: the figures below read {c.verdict!r}, but the sides ran one after the other, and with "
            f"a steady change over the runs taken out (a trend fitted over both sides' runs in time order) {net}, "
            f"which does not give that verdict at ±{fmt_pct(threshold)}%: the difference may be the machine changing "
            f"over the campaign."), None


def mark(con: duckdb.DuckDBPyConnection, campaign: str, rows: list[CellComparison],
         failed_list: list[FailedRuns], values: dict[str, dict[str, np.ndarray]] | None = None,
         threshold: float = 0.01) -> list[CellComparison]:
    """``rows`` with the sentence and warnings of each cell whose sides ran one after the other, whose runs ran
    several kernels, or some of whose runs failed (``failed_list``: failed_runs), extended; the verdict of a cell
    whose sides ran one after the other withheld when trend_check says so (``values``: cell id -> env -> the
    side's values in run order)."""
    spans = spans_of(con, campaign)
    kernels: dict[tuple[str, str, str, str], dict[str, dict[str, int]]] = {}
    for cluster, node, test, key, env, kernel, n in con.execute(_KERNELS_SQL, [campaign]).fetchall():
        kernels.setdefault((cluster, node, test, key), {}).setdefault(kernel, {})[env] = n
    failed: dict[tuple[str, str, str, str], dict[str, dict[str, tuple[int, int]]]] = {}
    for f in failed_list:
        failed.setdefault((f.cluster, f.node, f.test, f.params_key), {}).setdefault(f.env, {})[f.reason] = \
            (f.n, f.retried)
    out = []
    for c in rows:
        key = (c.cluster, c.node, c.test, c.params)
        apart = note(c, spans.get(key, {}))
        withheld, net = trend_check(c, spans[key], (values or {}).get(c.id, {}), threshold) if apart else (None, None)
        said = [s for s in (apart, net, kernel_note(c, kernels.get(key, {})), failed_note(c, failed.get(key, {}))) if s]
        if withheld:  # said first: the sentence it withholds follows as the figures; flagged, so the matrices
            # paint it withheld and the cross-node summary leaves it out, as any blocking flag
            details = {**c.flag_details, SEQUENTIAL: withheld}
            c = c.model_copy(update={"verdict": INCONCLUSIVE, "direction": None,
                                     "flags": [f for f in ORDER if f in details], "flag_details": details,
                                     "sentence": f"{withheld} {c.sentence}", "warnings": [*c.warnings, withheld]})
        out.append(c.model_copy(update={"sentence": " ".join([c.sentence, *said]), "warnings": [*c.warnings, *said]})
                   if said else c)
    return out
