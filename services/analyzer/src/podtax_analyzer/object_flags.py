"""The flags of a cell's control-plane objects (the parser's run flags ERRORS, LOWER_BOUND, WATCH_GAP, RETRIED,
DELETE_REFUSED and LEFT_BEHIND), each with a sentence a person understands, as flags.py's: the sentence when the flag
applies, else None."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
from podtax.parsers.timeline import rank_rests_on_bound
from podtax.templates import parse_params

from podtax_analyzer.celldata import CellData, Side
from podtax_analyzer.celldata_failures import SlowObjects, beyond_spread
from podtax_analyzer.wording import fmt_pct, fmt_value, plural, side_name

_WHOLE_RUN = ("_makespan_s", "wall_s")  # left out of a run with failed objects (parsers/timeline.py)


def errors(cell: CellData) -> str | None:
    """Objects that failed in a side's control-plane runs (the parser's ERRORS run flag): how many of how many,
    in how many runs, what the first lacked, and what that does to this metric."""
    parts, counts, survivors = [], [], False
    for s in (cell.host, cell.pod):
        f, name = s.failures, side_name(s.env, cell.pair)
        if not f.error_runs:
            continue
        total = f.total_objects
        parts.append(f"{f.failed} of {total} {name} objects failed, in {f.error_runs} of its "
                     f"{plural(f.runs, 'run')} (first: {f.first_error or 'not named'})")
        counts.append(_counted(s, name, cell.metric))
        survivors = survivors or not s.n_counted_given_up
    if not parts:
        return None
    head = f"Objects failed: {'; '.join(parts)}."
    if cell.metric.endswith(_WHOLE_RUN):
        return (f"{head} A run with failed objects has no makespan or wall time (it would time fewer objects than "
                f"asked), so those runs are not in this cell.")
    if cell.metric.endswith("_ms"):  # per-object latencies: of the objects that finished, and those given up
        tail = ", so they look better than the backend was (the tail above all)" if survivors else ""
        said = "; ".join(counts)
        return f"{head} {said[0].upper()}{said[1:]}{tail}."
    return head


def _counted(s: Side, name: str, metric: str) -> str:
    """Which of a side's objects its per-object latency figures count: those that finished, and when its runs'
    LOWER_BOUND flag says so (Side.n_counted_given_up), those given up while waiting in the metric's phase, at the
    time they were given up (the phases table's count); failed objects otherwise are not in them."""
    f = s.failures
    total, done = f.total_objects, f.total_objects - f.failed
    if not s.n_counted_given_up:
        return (f"{fmt_pct(f.failed / total)}% of {name} objects never finished: the {name} figures are of the "
                f"{done} that did")
    given_up = f.given_up.get(re.sub(r"_(p50|p95|p99|max|min|avg)_ms$", "", metric), 0)
    if not given_up:  # no phases rows (a store older than them): the flag alone says they are counted
        return (f"the {name} figures count the {done} objects that finished and those given up while waiting, at "
                f"the time they were given up (lower bounds: they took longer)")
    rest = f.failed - given_up
    counted = f"all {total} objects" if not rest else f"{done + given_up} of the {total} objects"
    return (f"the {name} figures count {counted}: the {done} that finished and the {given_up} given up while "
            f"waiting, at the time they were given up (lower bounds: they took longer)"
            + (f"; the other {rest} failed objects are not in them" if rest else ""))


def lower_bound(cell: CellData) -> str | None:
    """A side's median is a lower bound when some of its runs' values are (the parser's LOWER_BOUND run flag: the
    figure counts objects given up while waiting at the time they were given up; they took longer) and one of
    them sits at or below the median's rank (Side.median_is_bound): a bounded run above the median cannot move it."""
    sides = [s for s in (cell.host, cell.pod) if s.median_is_bound]
    if not sides:
        return None
    runs = " and ".join(f"{s.n_lower_bound} of the {plural(s.n, side_name(s.env, cell.pair) + ' run')}"
                        for s in sides)
    least = " and ".join(f"the {side_name(s.env, cell.pair)} median is at least "
                         f"{fmt_value(float(np.median(s.values)), cell.unit)}"
                         f" {cell.unit}" for s in sides)
    ratio = ("" if not (cell.host.n and cell.pod.n) else "; the ratio is no bound either way" if len(sides) == 2
             else "; the true ratio is at most the one shown" if sides[0] is cell.host
             else "; the true ratio is at least the one shown")
    return (f"Lower bound: in {runs}, {cell.metric} counts objects given up while waiting at the time they were "
            f"given up (they took longer), so {least}: the true value is larger{ratio}.")


def watch_gap(cell: CellData) -> str | None:
    """A side's runs whose value of this metric is an upper bound (the parser's WATCH_GAP run flag names it: end
    points a re-list saw after a dropped watch count at the time the re-list saw them; the true time was shorter).
    When the side's median rests on one (Side.median_is_upper_bound) the verdict allows for it (stats/verdict.py)."""
    runs = _runs_of(cell, lambda s: s.n_watch_gap)
    if not runs:
        return None
    return (f"Watch gap: {runs} timed {cell.metric} after a dropped watch: upper bounds (end points "
            f"seen only by the re-list after the gap count at the time it saw them; the true times were shorter); "
            f"{_upper_tail(cell)}.")


def _runs_of(cell: CellData, flagged: Callable[[Side], int]) -> str:
    """'k of n <side> runs' for each side whose runs have flagged(side) = k > 0, joined by 'and'; '' when none."""
    return " and ".join(f"{flagged(s)} of {plural(s.n, side_name(s.env, cell.pair) + ' run')}"
                        for s in (cell.host, cell.pod) if flagged(s))


def _upper_tail(cell: CellData) -> str:
    """What a side's upper-bound runs (WATCH_GAP, RETRIED's held) do to its median (Side.median_is_upper_bound)."""
    if any(s.median_is_upper_bound for s in (cell.host, cell.pod)):
        return "the median rests on them, so only a verdict they cannot have made stands"
    return "they lie below the median, which they cannot move"


def retried(cell: CellData) -> str | None:
    """A side's runs in which calls were refused (429, 5xx) and sent again (the parser's RETRIED run flag): their
    objects are timed from the attempt that succeeded; a call not re-timed (a consumer pod's create) leaves the wait
    in its phase, and the runs whose flag names this metric are upper bounds (as WATCH_GAP's, Side.n_held)."""
    sides = [s for s in (cell.host, cell.pod) if s.n_retried]
    if not sides:
        return None
    runs = " and ".join(f"{s.n_retried} of {plural(s.n, side_name(s.env, cell.pair) + ' run')}" for s in sides)
    head = (f"Retried: in {runs}, calls refused (429 or 5xx) were sent again; an object whose call starts its phase "
            f"is timed from the attempt that succeeded (the refused attempts and the wait the server asked for are "
            f"not in its latency; a makespan counts from the first attempt)")
    held = [f"{s.n_held} of the {side_name(s.env, cell.pair)} runs" for s in sides if s.n_held]
    if not held:
        return f"{head}."
    return (f"{head}; in {' and '.join(held)}, {cell.metric} rests on a call sent again but timed from its first "
            f"attempt (a consumer pod's create: its phase holds the wait): upper bounds; {_upper_tail(cell)}.")


def delete_refused(cell: CellData) -> str | None:
    """A side's runs that failed because their deletes were refused, after every object was created and bound (the
    parser's DELETE_REFUSED run flag): their create and bind figures count here as any run's; they have no delete
    figures (a delete phase's cells lack those runs) nor whole-run ones (objects_ok, errors, requests, wall time)."""
    runs = _runs_of(cell, lambda s: s.n_delete_refused)
    if not runs:
        return None
    return (f"Deletes refused: {runs} failed because the API refused their deletes (RBAC's or Nomad's "
            f"403 on a delete, or more than max(10, 10%) of their objects' deletes refused), after every object was "
            f"created and bound (pods: Ready): {cell.metric} "
            f"counts them as any run; they have no delete or whole-run figures (those cells lack these runs), and "
            f"what they could not delete stays until `podtax volumes cleanup --campaign {cell.campaign}`.")


def left_behind(cell: CellData) -> str | None:
    """Objects a side's control-plane runs did not delete (the parser's LEFT_BEHIND run flag)."""
    parts = [f"{plural(s.failures.left, 'object')} in {s.failures.left_runs} of the {s.failures.runs} "
             f"{side_name(s.env, cell.pair)} runs"
             for s in (cell.host, cell.pod) if s.failures.left_runs]
    if not parts:
        return None
    return (f"Left behind: {' and '.join(parts)} were not deleted when the run ended; they still hold storage and "
            f"names: run `podtax volumes cleanup --campaign {cell.campaign}`.")


def _rests_on_tail(metric: str, slow: SlowObjects) -> bool:
    """Whether a phase's figure, a median over the side's runs, is set by its slowest objects: the max, the mean and
    the makespan when at least half the runs had one (always, as slow_objects is told only then); a percentile when
    in at least half the runs it uses a slow object's order statistic (the parser's interpolation: 1 slow of 100 moves
    the p99), as the parser's lower bounds are told."""
    if metric.endswith(("_max_ms", "_avg_ms", "_makespan_s")):
        return _most(slow.slow_runs, slow.runs)
    found = re.search(r"_p(\d+)_ms$", metric)
    return found is not None and _most(sum(rank_rests_on_bound(n, n - k, float(found.group(1)))
                                           for n, k in slow.per_run), slow.runs)


def _most(some: int, runs: int) -> bool:
    """Whether `some` of `runs` set a median over the runs: at least half (at exactly half of an even count, the
    median averages a run of them in: 1 slow of 100 in 5 of 10 runs read the max 9.5x; review r7)."""
    return 2 * some >= runs


def _polled(cell: CellData, side: Side) -> bool:
    """Whether the side's end points were seen by polling (`observe=poll` in the cell's params: the runner polls
    Kubernetes only; Nomad's calls are timed when they return): each lies on the poll grid, up to poll_interval_s
    late, a spread no lognormal fits (review r7: at sigma 1.5 polled every 1 s, 111 of 200 campaigns with nothing
    stuck were beyond_spread's)."""
    try:
        words = parse_params(cell.params_key)
    except ValueError:  # not `k=v k=v`: no observe=poll to read
        return False
    return words.get("observe") == "poll" and side.env == "kubernetes"


def slow_objects(cell: CellData) -> str | None:
    """A few objects of a side far slower than the rest in most of its runs (a stuck provisioner's retries): how
    many of how many, in how many runs, against the side's median; and whether this figure rests on them (the tail)
    or leaves them out, so a verdict on a makespan or a p99 is not read as every object's. No flag when they are
    in fewer than half the runs (they set none of the cell's figures, medians over runs; BIMODAL tells such a tail),
    or when they neither stand apart (fewer objects between NEAR_TIMES x the median and them than them) nor are more
    than the side's own spread predicts (beyond_spread): the end of a long tail, lognormal sigma 1, not a few stuck
    objects. Either suffices: a wide spread (sigma 0.7, 1) hides 1 or 2 stuck of 100 from the first, not the
    second. A polled side (_polled) has the first only."""
    parts, rests = [], False
    for s in (cell.host, cell.pod):
        if (slow := s.slow) is None or not _most(slow.slow_runs, slow.runs):
            continue
        if slow.near >= slow.slow and (_polled(cell, s) or not beyond_spread(slow)):
            continue
        name, share = side_name(s.env, cell.pair), slow.slow / slow.objects
        rests = rests or _rests_on_tail(cell.metric, slow)
        parts.append(f"{slow.slow} of {slow.objects} {name} objects ({fmt_pct(share)}%), in {slow.slow_runs} of its "
                     f"{plural(slow.runs, 'run')}, took over 10x the {name} median of "
                     f"{fmt_value(slow.median_s * 1000, 'ms')} ms (the slowest {fmt_value(slow.slowest_s, 's')} s)")
    if not parts:
        return None
    phase = re.sub(r"_(p\d+_ms|max_ms|min_ms|avg_ms|makespan_s)$", "", cell.metric)
    said = (f"{cell.metric} rests on them: it describes those few, not the typical object ({phase}_p50_ms)"
            if rests else f"{cell.metric} leaves them out: the {phase} tail (max, p99, makespan) rests on them")
    return f"Slow objects: {'; '.join(parts)}. {said}."
