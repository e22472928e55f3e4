"""How imported runs stored twice were counted, in the words `podtax imports-twice` and the campaign report's warning
share (review r5 L1: the warning described only the first copy, the CLI all of them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from podtax.event_payloads import printable


def counted(rows: Sequence[Mapping[str, Any]]) -> str:
    """How the copies (rows with node and kept_node) were counted: on two nodes (two spellings of one), or twice on
    one node (both copies under the same spelling: two generations that each stored the node in lowercase)."""
    same = sorted({printable(r["node"]) for r in rows if r["node"] == r["kept_node"]})
    if not same:
        return "counted on two nodes"
    nodes = f"node{'s' if len(same) > 1 else ''} {', '.join(same)}"
    if all(r["node"] == r["kept_node"] for r in rows):
        return f"counted twice on {nodes}"
    return f"counted on two nodes or twice on {nodes}"
