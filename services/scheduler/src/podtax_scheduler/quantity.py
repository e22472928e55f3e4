"""Kubernetes resource quantities (`500m`, `1Gi`, `1e3`, `1.5`) as integers.

CPU is counted in millicores, every other resource in whole units (bytes for memory), rounded
up like the API server's ``Quantity.Value()``.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}
_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")

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
    m = _RE.match(s)
    if not m:
        raise QuantityError(f"not a quantity: {text!r} (examples: 500m, 2, 1Gi, 1e3)")
    number, exponent, suffix = m.groups()
    try:
        value = Decimal(number)
        if exponent:
            value *= Decimal(10) ** int(exponent[1:])
        else:
            value *= _SUFFIXES[suffix or ""]
    except InvalidOperation as exc:
        raise QuantityError(f"not a quantity: {text!r}") from exc
    return value


def to_int(resource: str, text: str | int | float) -> int:
    """Millicores for cpu, whole units (rounded up) for anything else."""
    value = parse(text)
    if resource == CPU:
        value *= 1000
    return math.ceil(value)
