"""A cluster file's shape checked before the emulator starts: a wrong type, a node without a usable name or two
nodes of one name gave a traceback (AttributeError, KeyError, a 409 ApiError) once it had begun to serve, and a
negative count or a misspelt `nodes:` served an empty cluster without a word (audit hU, session 56)."""

from __future__ import annotations

import re
import string
from typing import Any

MAX_NODES = 100_000  # count: 100000000 held the emulator (and the memory) for ever
_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9_.]{0,251}[a-z0-9])?")  # as podtax up --node takes it
_MAPPINGS = ("labels", "annotations", "capacity", "allocatable")
_KEYS = ("apiVersion", "kind", "name", "nodes", "storageClasses", "namespaces", "simulation", "provisioner", "faults")


def numbered(name: str) -> bool:
    """Whether a node name holds the node's number, '{i}' or formatted ('{i:03d}'), as expand_nodes fills it in."""
    try:
        return any(field == "i" for _, field, _, _ in string.Formatter().parse(name))
    except ValueError:  # an unmatched brace: no number field
        return False


def unknown_keys(data: dict[str, Any], keys: tuple[str, ...], where: str) -> str | None:
    """The line for a cluster file's top-level keys not among `keys` (kubesim's, nomadsim's), or None."""
    if unknown := sorted(str(k) for k in data if k not in keys):
        return f"{where}: unknown key(s) {', '.join(unknown)}; a cluster file has {', '.join(keys)}"
    return None


def problem(data: dict[str, Any], where: str) -> str | None:
    """What is wrong with a cluster file's nodes, simulation, provisioner and namespaces, or None."""
    if unknown := unknown_keys(data, _KEYS, where):  # `node:` for `nodes:` served no node
        return unknown
    for key in ("simulation", "provisioner"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            return f"{where}: '{key}' must be a mapping, got {data[key]!r}"
    namespaces = data.get("namespaces") or []
    if not isinstance(namespaces, list) or not all(isinstance(n, str) and n for n in namespaces):
        return f"{where}: 'namespaces' must be a list of names, got {namespaces!r}"
    seen: set[str] = set()
    for i, entry in enumerate(data.get("nodes") or []):
        at = f"{where}: nodes[{i}]"
        name, count = entry.get("name"), entry.get("count", 1)
        if not isinstance(name, str) or not name:
            return f"{at}: every node needs a name (text, e.g. 'name: worker-1')"
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            return f"{at}: count must be a whole number of nodes (0 or more), got {count!r}"
        if count > 1 and not numbered(name):  # 'worker-{i:03d}' was refused (fxU, session 56)
            return (f"{at}: count {count} needs '{{i}}' (or '{{i:03d}}') in the name (e.g. 'name: worker-{{i}}'): "
                    "one name each")
        try:
            names = [name.format(i=n) if count > 1 or numbered(name) else name
                     for n in range(min(count, MAX_NODES + 1))]
        except (KeyError, IndexError, ValueError, AttributeError, TypeError):  # '{i.x}': an AttributeError
            return f"{at}: name {name!r} may hold '{{i}}' or '{{i:03d}}' (the node's number) and no other braces"
        for key in _MAPPINGS:
            if entry.get(key) is not None and not isinstance(entry[key], dict):
                return f"{at}: '{key}' must be a mapping, got {entry[key]!r}"
        for key in ("taints", "conditions"):
            items = entry.get(key) or []
            if not isinstance(items, list) or not all(isinstance(t, dict) for t in items):
                return f"{at}: '{key}' must be a list of mappings, got {items!r}"
        if not all(isinstance(c.get("type"), str) for c in entry.get("conditions") or []):
            return f"{at}: every condition needs a type (e.g. '{{type: MemoryPressure, status: \"True\"}}')"
        if entry.get("arch") is not None and not isinstance(entry["arch"], str):
            return f"{at}: arch must be text (amd64, arm64, ...), got {entry['arch']!r}"
        for node in names:
            if not _NODE_NAME.fullmatch(node):
                return (f"{at}: {node!r} is not a node name (lowercase letters, digits and '-_.', starting and "
                        "ending with a letter or digit, as `podtax up --node` takes them (Kubernetes itself "
                        "takes no '_'))")
            if node in seen:
                return f"{at}: a second node named {node!r}: give each node its own name"
            seen.add(node)
        if len(seen) > MAX_NODES:
            return f"{where}: more than {MAX_NODES:,} nodes: the emulator holds every node in memory; give fewer"
    return None
