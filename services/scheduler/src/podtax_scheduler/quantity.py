"""Kubernetes resource quantities (`500m`, `1Gi`, `1e3`, `1.5`) as integers.

CPU is counted in millicores, every other resource in whole units (bytes for memory), rounded
up like the API server's ``Quantity.Value()``. The value is computed by the official client's
``kubernetes.utils.parse_quantity``; the text is first checked against the API server's grammar,
because that parser also accepts what the API rejects ("1 Gi", "1K", True).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import lru_cache

from kubernetes.utils import parse_quantity

_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"


class QuantityError(ValueError):
    """A quantity string that Kubernetes would reject."""


@lru_cache(maxsize=4096)
def parse(text: str | int | float) -> Decimal:
    """Parse a quantity into an exact Decimal of base units (cores, bytes, ...)."""
    if isinstance(text, bool):
        raise QuantityError(f"not a quantity: {text!r}")
    if isinstance(text, int | float):
        return Decimal(str(text))
    s = text.strip()
    if not _RE.match(s):
        raise QuantityError(f"not a quantity: {text!r} (examples: 500m, 2, 1Gi, 1e3)")
    try:
        return Decimal(parse_quantity(s))
    except ValueError as exc:
        raise QuantityError(f"not a quantity: {text!r}") from exc


def to_int(resource: str, text: str | int | float) -> int:
    """Millicores for cpu, whole units (rounded up) for anything else."""
    value = parse(text)
    if resource == CPU:
        value *= 1000
    return math.ceil(value)
