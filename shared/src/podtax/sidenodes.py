"""Node names an import manifest spells two ways, so that one machine's host and pod runs would never pair.

A cell is one node, test and params: the host rows of `node1.example.com` and the pod rows of `node1` fall into
two cells, one side each, and neither gets a ratio. Case is not such a difference: Kubernetes names nodes in
lowercase and host names ignore case, so the manifest check keeps every node name in lowercase (`Node-1` and
`node-1` are one node) and case_warnings says so of each name it rewrote. one_sided_warnings names, per test, the
nodes that have rows of one side only while others have rows of the other side only: a full and a short name of
one machine (one name is the other's first label; never names shaped like IP addresses) are named together, any
others listed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from podtax import sides

MAX_NAMED = 5  # nodes named in one warning


def case_warnings(rows: Iterable[tuple[int, str, str | None]]) -> list[str]:
    """One sentence per node whose name the manifest writes with capitals; ``rows`` are (line, node in
    lowercase, the node as written or None when that is the lowercase)."""
    spellings: dict[str, dict[str, int]] = {}
    for line, node, spelled in rows:
        spellings.setdefault(node, {}).setdefault(spelled or node, line)
    out = []
    for node, seen in spellings.items():
        if set(seen) == {node}:
            continue
        if len(seen) == 1:
            ((spelled, line),) = seen.items()
            out.append(f"node {spelled} (line {line}) is imported as {node}: node names "
                       f"ignore case and Kubernetes writes them in lowercase, so its runs pair with {node}'s; write "
                       f"{node} in the manifest to silence this")
            continue
        named = " and ".join(f"{s} (line {line})" for s, line in seen.items())
        out.append(f"node names ignore case: {named} are one node, imported as {node} (Kubernetes writes node "
                   f"names in lowercase), so their host and pod runs pair; write {node} throughout the manifest "
                   f"to silence this")
    return out


_IP_SHAPED = re.compile(r"(^|\.)\d{1,3}(\.\d{1,3}){3}$|^[\d.]+$")  # ends in an IPv4 address, or only digits


def _full_and_short(x: str, y: str) -> bool:
    """Whether one name is the other's first label (node1.example.com and node1): never for names shaped like an
    IP address (10.0.0.1 and 10.0.0.2, cn-hangzhou.192.168.0.1 and cn-hangzhou.192.168.0.2 are other machines)."""
    if _IP_SHAPED.search(x) or _IP_SHAPED.search(y):
        return False
    return x.split(".", 1)[0] == y != x or y.split(".", 1)[0] == x != y


def _names(nodes: list[str]) -> str:
    shown = ", ".join(nodes[:MAX_NAMED])
    return shown + (f" and {len(nodes) - MAX_NAMED} more" if len(nodes) > MAX_NAMED else "")


def _apart(test: str, b: str, c: str, only_b: list[str], only_c: list[str]) -> list[str]:
    out = []
    for x in list(only_b):  # a full and a short name of one machine: named as a pair
        if (y := next((y for y in only_c if _full_and_short(x, y)), None)) is not None:
            out.append(f"{test}: node {x} has {b} rows only and node {y} {c} rows only: if they are one machine "
                       f"under a full and a short name, give both the same node name (as `kubectl get nodes` shows "
                       f"it); else their runs fall into one-sided cells and neither gets a {c}/{b} ratio")
            only_b.remove(x)
            only_c.remove(y)
    if only_b and only_c:
        out.append(f"{test}: node(s) {_names(only_b)} have {b} rows only and {_names(only_c)} {c} rows only, so "
                   f"their runs fall into one-sided cells and none gets a {c}/{b} ratio; if some are one machine "
                   f"under two names, give it one node name")
    return out


def one_sided_warnings(rows: Iterable[tuple[str, str, str]]) -> list[str]:
    """Per test and pair of sides, the nodes with rows of one side only while other nodes have rows of the other
    side only; ``rows`` are (node, test, env)."""
    envs: dict[str, dict[str, set[str]]] = {}
    for node, test, env in rows:
        envs.setdefault(test, {}).setdefault(node, set()).add(env)
    out = []
    for test, by_node in envs.items():
        alone: dict[str, list[str]] = {}
        for node, ran in sorted(by_node.items()):
            if len(ran) == 1:
                alone.setdefault(next(iter(ran)), []).append(node)
        order = sorted(alone, key=sides.rank)
        for i, b in enumerate(order):
            for c in order[i + 1:]:
                out += _apart(test, b, c, list(alone[b]), list(alone[c]))
    return out
