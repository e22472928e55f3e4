"""Cheap checks a campaign file passes before it is parsed and validated in full.

Validating a campaign checks every parameter combination of every test, and YAML parsing is the
slow part of reading a big file: a 9 MB matrix took 129 s and 2 GB before these checks. So the file
size is capped before parsing, and the plan size (runs = combinations x nodes x environments x
repetitions, summed over tests) is computed from the raw document, before any combination is built.
Both refusals give the reason and the cap.
"""

from __future__ import annotations

import math
from typing import Any

MAX_FILE_BYTES = 512 * 1024  # a campaign's document must fit the runner's KV header (campaign.MAX_HEADER_BYTES)
MAX_TIMEOUT_S = 86400  # a run's timeout, seconds
DEFAULT_ENVS = 2  # host and kubernetes
DEFAULT_MIN, DEFAULT_MAX = 6, 20  # Repetitions' defaults


def size_problem(n_bytes: int, filename: str, *, exact: bool = True) -> str | None:
    if n_bytes <= MAX_FILE_BYTES:
        return None
    size = f"{'' if exact else 'at least '}{n_bytes:,} bytes"
    return (f"{filename}: the file is {size}, above the cap of {MAX_FILE_BYTES:,} bytes for a campaign file; "
            f"list fewer values in the matrix, or split it into several campaigns")


def _count(value: Any, default: int) -> int:
    return len(value) if isinstance(value, list | dict) else default


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def rough_runs(data: dict[str, Any]) -> int:
    """Runs the document plans at most, from its raw structure (a node selector counts as one node).
    Malformed parts count as the defaults: full validation reports them."""
    tests = data.get("tests")
    combos = 0
    for test in tests if isinstance(tests, list) else []:
        matrix = test.get("matrix") if isinstance(test, dict) else None
        sizes = [len(v) if isinstance(v, list) else 1 for v in matrix.values()] if isinstance(matrix, dict) else []
        combos += max(1, math.prod(sizes)) if sizes else 1
    nodes = data.get("nodes")
    reps = data.get("repetitions") if isinstance(data.get("repetitions"), dict) else {}
    targeted = reps.get("target_ci_width") is not None
    per_cell = _int(reps.get("max"), DEFAULT_MAX) if targeted else _int(reps.get("min"), DEFAULT_MIN)
    return combos * (len(nodes) if isinstance(nodes, list) else 1) * _count(data.get("environments"),
                                                                            DEFAULT_ENVS) * per_cell


def plan_problem(data: dict[str, Any], filename: str, max_runs: int) -> str | None:
    n = rough_runs(data)
    if n <= max_runs:
        return None
    return (f"{filename}: the campaign would plan {n:,} runs (parameter combinations x nodes x environments x "
            f"repetitions), above the cap of {max_runs:,}; split it into several campaigns, or lower the "
            f"repetitions, the nodes or the matrix")
