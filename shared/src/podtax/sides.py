"""The two sides of a comparison (docs/control-plane.md, "Sides").

A campaign's environments name the sides. The baseline is the side that comes first in the fixed
order host, kubernetes, nomad; the ratio of a cell is candidate / baseline. So the pod tax is
kubernetes/host and the control-plane comparison is nomad/kubernetes.
"""

from __future__ import annotations

from collections.abc import Iterable

ORDER: tuple[str, ...] = ("host", "kubernetes", "nomad")


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
