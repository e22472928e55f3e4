"""Label selectors (=, ==, !=, in, notin, exists, !exists) and field selectors (=, ==, !=)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from podtax_kubesim.util import ApiError, Obj

Matcher = Callable[[Obj], bool]

_SET = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*$")


def _split(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return parts


Requirement = tuple[str, str, frozenset[str]]


def parse_labels(text: str | None) -> list[Requirement]:
    reqs: list[Requirement] = []
    for part in _split(text or ""):
        if m := _SET.match(part):
            values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
            reqs.append((m.group(1), m.group(2), values))
        elif m := _EQ.match(part):
            reqs.append((m.group(1), "!=" if m.group(2) == "!=" else "=", frozenset([m.group(3)])))
        elif m := _EXISTS.match(part):
            reqs.append((m.group(2), "!exists" if m.group(1) else "exists", frozenset()))
        else:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {part.strip()!r}")
    return reqs


def labels_match(reqs: list[Requirement], labels: dict[str, str]) -> bool:
    for key, op, values in reqs:
        present = key in labels
        if op == "=" or op == "in":
            if not present or labels[key] not in values:
                return False
        elif op == "!=" or op == "notin":
            if present and labels[key] in values:
                return False
        elif op == "exists":
            if not present:
                return False
        elif op == "!exists" and present:
            return False
    return True


def parse_fields(text: str | None) -> list[tuple[str, bool, str]]:
    """[(dotted path, equal?, value)]."""
    out = []
    for part in _split(text or ""):
        m = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*?)\s*$", part)
        if not m:
            raise ApiError(400, "BadRequest", f"invalid field selector: {part.strip()!r}")
        out.append((m.group(1), m.group(2) != "!=", m.group(3)))
    return out


def field_value(obj: Obj, path: str) -> str:
    node: Any = obj
    for key in path.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(key)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def fields_match(reqs: list[tuple[str, bool, str]], obj: Obj) -> bool:
    return all((field_value(obj, path) == value) == equal for path, equal, value in reqs)


def matcher(label_selector: str | None, field_selector: str | None) -> Matcher | None:
    """One predicate for both selectors, or None when nothing is selected."""
    lreqs, freqs = parse_labels(label_selector), parse_fields(field_selector)
    if not lreqs and not freqs:
        return None

    def match(obj: Obj) -> bool:
        if lreqs and not labels_match(lreqs, obj.get("metadata", {}).get("labels") or {}):
            return False
        return not freqs or fields_match(freqs, obj)

    return match


def match_label_selector(selector: Obj | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels + matchExpressions) against labels."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(node_requirement(expr, labels) for expr in selector.get("matchExpressions") or [])


def node_requirement(expr: Obj, labels: dict[str, str]) -> bool:
    """A (node) selector requirement: In, NotIn, Exists, DoesNotExist, Gt, Lt."""
    key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    present, value = key in labels, labels.get(key)
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            return int(value or "") > int(values[0]) if op == "Gt" else int(value or "") < int(values[0])
        except ValueError:
            return False
    return False
