"""The two sides of a comparison (docs/control-plane.md, "Sides").

A campaign's environments name the sides. The baseline is the side that comes first in the fixed
order host, kubernetes, nomad; the ratio of a cell is candidate / baseline. So the pod tax is
kubernetes/host and the control-plane comparison is nomad/kubernetes.
"""

from __future__ import annotations

from collections.abc import Iterable

ORDER: tuple[str, ...] = ("host", "kubernetes", "nomad")


# Units of counted things (objects_ok, errors, requests_per_object, retransmits): two sides have more or fewer
# of them, never "faster" or "slower" (an audit read "nomad 100% faster" for no errors).
COUNT_UNITS = frozenset({"count", "requests"})
# Units of levels (iperf3's lost_percent, cpu_local_percent): higher or lower, never "faster" or "slower" (an
# audit read "pod 2400.0% slower" for a pod that lost 2.5% of its packets against the host's 0.1%).
LEVEL_UNITS = frozenset({"%"})


def change_word(ratio: float, higher_is_better: bool, unit: str = "") -> str:
    """How the candidate's value differs from the baseline's (ratio = candidate / baseline, not 1): "faster"
    or "slower" (better or worse in the metric's direction), "more" or "fewer" for a count, "higher" or
    "lower" for a level (a percentage)."""
    if unit in COUNT_UNITS:
        return "more" if ratio > 1.0 else "fewer"
    if unit in LEVEL_UNITS:
        return "higher" if ratio > 1.0 else "lower"
    return "faster" if (ratio > 1.0) == higher_is_better else "slower"


def verdict_word(verdict: str, higher_is_better: bool, unit: str = "") -> str | None:
    """The word a "faster" / "slower" verdict (better / worse in the metric's direction) is said with: the
    verdict itself, "more" / "fewer" for a count (fewer errors is "faster"), "higher" / "lower" for a level
    (a lower loss is "faster"); None for any other verdict."""
    if verdict not in ("faster", "slower"):
        return None
    # the ratio of such a verdict: above 1 when better means higher; change_word gives the verdict back for a speed
    return change_word(2.0 if (verdict == "faster") == higher_is_better else 0.5, higher_is_better, unit)


def rank(env: str) -> int:
    """Position of an environment in the fixed order; unknown names raise ValueError."""
    try:
        return ORDER.index(env)
    except ValueError:
        raise ValueError(f"unknown environment {env!r}; known: {', '.join(ORDER)}") from None


def pair(envs: Iterable[str]) -> tuple[str, str]:
    """(baseline, candidate) of exactly two distinct environments, in the fixed order."""
    unique = sorted(set(envs), key=rank)
    if len(unique) != 2:
        raise ValueError(f"a comparison needs exactly two environments, got {', '.join(unique) or 'none'}")
    return unique[0], unique[1]
