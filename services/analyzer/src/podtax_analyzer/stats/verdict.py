"""The verdict of one cell, and the words "pod X% faster/slower".

Definitions (ratio r = median(pod) / median(host); [lo, hi] its 95% interval; t the practical
threshold, default 0.01 = 1%; p_adj the rank-test p-value after the campaign's correction;
alpha = 0.05):

- ``faster`` / ``slower``: p_adj < alpha AND the whole interval lies beyond the practical band
  on one side (lo > 1 + t or hi < 1 - t). Whether a higher value is faster comes from the metric
  (``higher_is_better``): for throughput r > 1 is faster, for a duration r < 1 is faster.
- ``no detectable difference``: the whole interval lies inside the band [1 - t, 1 + t], so any
  difference is smaller than the threshold (an equivalence statement, not just "not significant"),
  and the cell's outliers are not a second group: when all of them are runs of one side that lie
  together on one side of its median (stats.outliers.is_second_group: at least 2, their range at most a
  quarter of their distance from the median), that share of the runs differs (2 of 12 pod runs 30%
  slower) and equivalence is not claimed: the verdict is ``inconclusive`` and the sentence says how
  many runs, how far and which way. A faster/slower verdict stands, and its sentence says the same.
- ``inconclusive``: anything else: the interval straddles a band edge, the test and the interval
  disagree, a blocking flag (CONFOUNDED, INSUFFICIENT, BIMODAL,
  DRIFT) withholds the headline, or there
  is no interval at all.
- ``not comparable``: the cell has no two sides (no runs on one, or a one-sided test such as
  pod-startup); set by cell_analysis.finalize, as no ratio can exist.
- ``set by the parameters``: the requested parameters fix the metric's value in every run
  (podtax.templates.set_by_params: sysbench's event count under `--events=N`), so there is nothing to
  compare: no ratio, interval or p-value (the cell is in no correction family); set by cell_analysis.
"""

from __future__ import annotations

from podtax.sides import change_word

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no detectable difference"
INCONCLUSIVE = "inconclusive"
NOT_COMPARABLE = "not comparable"  # a cell without runs on both sides: no ratio can exist (cell_analysis)
SET_BY_PARAMS = "set by the parameters"  # the parameters fix the metric (podtax.templates.set_by_params)
VERDICTS = (FASTER, SLOWER, NO_DIFFERENCE, INCONCLUSIVE, NOT_COMPARABLE, SET_BY_PARAMS)
ALPHA = 0.05


def direction(ratio: float, higher_is_better: bool) -> str:
    """"faster" when the pod's value is better than the host's, "slower" when worse, else "same"."""
    if ratio == 1.0:
        return "same"
    return FASTER if (ratio > 1.0) == higher_is_better else SLOWER


def change_phrase(ratio: float, higher_is_better: bool, names: tuple[str, str] = ("host", "pod"),
                  unit: str = "") -> str:
    """E.g. "pod 3.0% slower" (the percentage is |ratio - 1|, one decimal); names = (baseline, candidate)
    as sentences call them: ("host", "pod") for the pod tax, ("kubernetes", "nomad") for volumes. A count
    (podtax.sides.COUNT_UNITS: objects_ok, errors, requests) is "nomad 91.5% fewer", not faster."""
    if ratio == 1.0:
        return f"{names[1]} and {names[0]} equal"
    return f"{names[1]} {abs(ratio - 1.0) * 100:.1f}% {change_word(ratio, higher_is_better, unit)}"


def decide(
    ratio: float | None,
    ci_low: float | None,
    ci_high: float | None,
    p_adjusted: float | None,
    higher_is_better: bool,
    *,
    threshold: float = 0.01,
    blocked: bool = False,
    second_group: bool = False,
    alpha: float = ALPHA,
) -> str:
    """Return one of VERDICTS following the definitions in the module docstring (``second_group``: the
    cell's outliers are a second group of one side's runs)."""
    if blocked or ratio is None or ci_low is None or ci_high is None:
        return INCONCLUSIVE
    upper, lower = 1.0 + threshold, 1.0 - threshold
    significant = p_adjusted is not None and p_adjusted < alpha
    if significant and (ci_low > upper or ci_high < lower):
        return direction(ci_low if ci_low > upper else ci_high, higher_is_better)
    if lower <= ci_low and ci_high <= upper and not second_group:
        return NO_DIFFERENCE
    return INCONCLUSIVE
