"""Latency/duration distributions from cluster files: a number (fixed seconds) or a mapping
{distribution: fixed|lognormal|uniform|exponential, ...}."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

Sampler = Callable[[], float]


def sampler(spec: Any, rng: random.Random, default: float = 0.0) -> Sampler:
    if spec is None:
        return lambda: default
    if isinstance(spec, int | float | str):
        value = float(spec)
        return lambda: value
    kind = spec.get("distribution", "fixed")
    if kind == "fixed":
        value = float(spec.get("seconds", default))
        return lambda: value
    if kind == "lognormal":  # median (seconds) and sigma of the underlying normal
        mu, sigma = math.log(float(spec["median"])), float(spec.get("sigma", 0.5))
        return lambda: rng.lognormvariate(mu, sigma)
    if kind == "uniform":
        low, high = float(spec.get("min", 0.0)), float(spec["max"])
        return lambda: rng.uniform(low, high)
    if kind == "exponential":
        mean = float(spec["mean"])
        return lambda: rng.expovariate(1.0 / mean) if mean > 0 else 0.0
    raise ValueError(f"unknown distribution {kind!r} (fixed, lognormal, uniform, exponential)")
