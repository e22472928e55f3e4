"""Why `podtax compare` calls an unblocked change inconclusive (audit: provisioned_p99_ms 0.215 -> 0.389, 95% CI
+0.065 to +0.188, read "the interval is too wide" while the interval cleared the threshold and the Holm-adjusted
p = 0.248 was what failed). The reason follows decide()'s rule: an interval that straddles the ±threshold band is
too wide; one that clears it lacks significance after the correction."""

from __future__ import annotations

import pytest
from podtax_analyzer.campaign_compare import _why_inconclusive
from podtax_analyzer.stats.verdict import decide

CASES = [  # change CI (NEW/BASE), adjusted p, the reason's beginning
    ((0.95, 1.30), 0.30, "the interval is too wide"),  # straddles the band
    ((1.005, 1.30), 0.01, "the interval is too wide"),  # reaches into the ±1% band
    ((1.30, 1.87), 0.248, "the interval clears the ±1% threshold, but the adjusted p-value (0.248) is not below 0.05"),
    ((0.50, 0.80), 0.06, "the interval clears the ±1% threshold, but the adjusted p-value (0.06) is not below 0.05"),
    ((1.30, 1.87), None, "no p-value could be computed"),
    ((None, None), None, "the interval is too wide"),
]


@pytest.mark.parametrize(("ci", "p", "reason"), CASES)
def test_the_reason_names_what_failed(ci, p, reason):
    lo, hi = ci
    ratio = None if lo is None else (lo + hi) / 2
    assert decide(ratio, lo, hi, p, True, threshold=0.01) == "inconclusive"  # only inconclusive cases get a reason
    got = _why_inconclusive({"change_ci_low": lo, "change_ci_high": hi, "p_adjusted": p}, 0.01)
    assert got.startswith(reason), got
