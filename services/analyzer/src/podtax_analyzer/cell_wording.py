"""The wording a cell's sentence shares (cell_analysis): its sides' medians, and the sentences of a metric the
parameters set and of a descriptive figure."""

from __future__ import annotations

from podtax import templates
from podtax.phases import DESCRIPTIVE_WHY

from podtax_analyzer.stats.verdict import change_phrase
from podtax_analyzer.wording import fmt_ratio, fmt_value, p_text_of, plural, side_name


def median_text(f: dict, side: str) -> str:
    """A side's median as the sentence says it: "at least 10000" when it is a lower bound (LOWER_BOUND), "at most
    10000" an upper one (WATCH_GAP, RETRIED's held), "at least or at most" both."""
    way = " or ".join(w for w, bound in (("at least", "lower"), ("at most", "upper")) if f[f"{side}_{bound}_bound"])
    return f"{way} " * bool(way) + fmt_value(f[f"{side}_median"], f["unit"])


def sides_text(f: dict, base: str, cand: str) -> str:
    """"host median 1003 events/s over 10 runs, pod median 904.8 events/s over 1 run"."""
    return (f"{base} median {median_text(f, 'host')} {f['unit']} over {plural(f['n_host'], 'run')}, {cand} median "
            f"{median_text(f, 'pod')} {f['unit']} over {plural(f['n_pod'], 'run')}")


def set_by_sentence(f: dict, set_by: templates.Fixed) -> str:
    pair = (f["baseline"], f["candidate"])
    medians = (f["host_median"], f["pod_median"])
    sides = " and ".join(f"{side_name(env, pair)} {fmt_value(m, f['unit'])}"
                         for env, m in zip(pair, medians, strict=True) if m is not None)
    return (f"Set by {set_by.by}: {set_by.how} (median {sides} {f['unit']}), so it measures nothing to compare: "
            f"no ratio or verdict; the run's speed is in its other metrics.")


def descriptive_sentence(f: dict, group: str | None) -> str:
    """A descriptive figure's sentence (podtax.phases.is_descriptive): ratio, interval and raw p-value, no verdict."""
    pair = (f["baseline"], f["candidate"])
    base, cand = side_name(pair[0], pair), side_name(pair[1], pair)
    ratio, lo, hi = f["ratio"], f["ci_low"], f["ci_high"]
    interval = f"95% CI {fmt_ratio(lo)} to {fmt_ratio(hi)}" if lo is not None else "no interval"
    p = f"unadjusted {p_text_of(f['p_value'])}" if f["p_value"] is not None else "no p-value"
    if ratio is None:  # a median of 0 (x/0, or 0/0), or one too close to the float limits
        zero = " and ".join(name for name, m in ((base, f["host_median"]), (cand, f["pod_median"])) if m == 0)
        said = (f"no ratio: the {zero} median{'s are' if ' and ' in zero else ' is'} 0" if zero
                else "no ratio could be computed")
        figures = f"{said} ({p}; {sides_text(f, base, cand)})"
    else:
        figures = (f"{change_phrase(ratio, f['higher_is_better'], (base, cand), f['unit'])} than {base} (ratio "
                   f"{fmt_ratio(ratio)}, {interval}, {p}; {sides_text(f, base, cand)})")
    text = (f"Descriptive, not tested ({DESCRIPTIVE_WHY}): {figures}; it is in no correction family and "
            f"has no verdict of its own: the phase's percentiles are the tested figures.")
    return text + (f" Besides, {group}: a second group of runs that the median does not show." if group else "")
