"""The provenance block printed around every benchmark, by the host agent and the pod wrapper alike.

Before and after the tool, one line each on stderr:

    #podtax phase=before tool_version="sysbench 1.0.20" cpu_limit=1.5 nr_throttled=0 throttled_usec=0
    #podtax phase=after nr_throttled=12 throttled_usec=48211

Values are `key=value` tokens; a value with spaces is double-quoted. `cpu_limit` is in cores
(`max` or absent = unlimited). Parsers never see these lines: :func:`split` removes them first.
"""

from __future__ import annotations

import shlex

from podtax.benchwrap import PREFIX
from podtax.events import Provenance


def split(text: str) -> tuple[str, dict[str, dict[str, str]]]:
    """Remove `#podtax` lines from text; return the rest and {phase: fields}."""
    if PREFIX not in text:
        return text, {}
    kept: list[str] = []
    phases: dict[str, dict[str, str]] = {}
    for line in text.splitlines(keepends=True):
        if line.startswith(PREFIX):
            try:
                tokens = shlex.split(line[len(PREFIX):])
            except ValueError:
                continue
            fields = dict(t.partition("=")[::2] for t in tokens if "=" in t)
            phases[fields.pop("phase", "unknown")] = fields
        else:
            kept.append(line)
    return "".join(kept), phases


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def to_model(phases: dict[str, dict[str, str]], **extra: object) -> Provenance:
    before, after = phases.get("before", {}), phases.get("after", {})
    limit = before.get("cpu_limit")
    return Provenance(
        kernel=before.get("kernel"),
        hw_threads=_int(before.get("hw_threads")),
        machine=before.get("machine") or None,
        tool_arch=before.get("tool_arch") or None,
        cpu_limit=float(limit) if limit not in (None, "", "max") else None,
        nr_throttled_before=_int(before.get("nr_throttled")),
        nr_throttled_after=_int(after.get("nr_throttled")),
        throttled_usec_before=_int(before.get("throttled_usec")),
        throttled_usec_after=_int(after.get("throttled_usec")),
        **extra,  # type: ignore[arg-type]
    )

