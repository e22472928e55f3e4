"""What the API server would refuse in a `podtax simulate` workload's pods, checked at load.

The scheduler's parsers take what the API server has admitted: an unknown key is ignored, an unknown operator
matches nothing, a term without topologyKey matches no node. A simulated pod is not admitted by anyone, so these
checks refuse (one problem, naming the fix) what Kubernetes' validation (apimachinery's label and selector rules,
core validation of affinity) would refuse: misspelled keys, a missing topologyKey, an unknown operator, a label
key or value, or a namespace name, that is not one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_VALUE = re.compile(rf"^({_NAME})?$")
_LABEL_NAME = re.compile(rf"^{_NAME}$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_POD_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_OPERATORS = (*_POD_OPERATORS, "Gt", "Lt")
_TERM_KEYS = ("labelSelector", "namespaceSelector", "namespaces", "topologyKey", "matchLabelKeys",
              "mismatchLabelKeys")


class Refused(ValueError):
    """One thing Kubernetes would refuse: `where` (a dotted path) and what to write instead."""


def label_key_problem(key: Any) -> str | None:
    """Why `key` is not a label key (an optional DNS-subdomain prefix and `/`, then a name of at most 63)."""
    if not isinstance(key, str) or not key:
        return "a label key is a non-empty string"
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"label key {key!r}: its prefix must be a lowercase DNS subdomain (such as example.com)"
    if not _LABEL_NAME.match(name):
        return (f"label key {key!r}: at most 63 letters, digits, '-', '_' or '.', starting and ending with a "
                f"letter or digit")
    return None


def label_value_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not _LABEL_VALUE.match(value):
        return (f"label value {value!r}: at most 63 letters, digits, '-', '_' or '.', starting and ending with a "
                f"letter or digit (or empty)")
    return None


def check_labels(labels: Mapping[str, Any], where: str) -> None:
    for k, v in labels.items():
        if problem := label_key_problem(k) or label_value_problem(v):
            raise Refused(f"{where}: {problem}")


def check_namespace(name: Any, where: str) -> None:
    if not isinstance(name, str) or not DNS_LABEL.match(name):
        suggestion = re.sub(r"[^a-z0-9-]+", "-", str(name).lower()).strip("-")[:63] or "sim"
        raise Refused(f"{where}: namespace {name!r} is not a lowercase RFC 1123 label (letters, digits and '-', "
                      f"at most 63); write {suggestion}")


def _keys(raw: Any, allowed: tuple[str, ...], where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise Refused(f"{where}: give a mapping of {', '.join(allowed)}")
    unknown = [k for k in raw if k not in allowed]
    if unknown:
        raise Refused(f"{where}.{unknown[0]}: unknown key; use {', '.join(allowed)}")
    return raw


def _list(raw: Any, where: str) -> list[Any]:
    if not isinstance(raw, list):
        raise Refused(f"{where}: give a list")
    return raw


def _expression(e: Any, operators: tuple[str, ...], where: str, node: bool) -> None:
    e = _keys(e, ("key", "operator", "values"), where)
    if node and not e.get("key"):
        raise Refused(f"{where}.key: required")
    if not node and (problem := label_key_problem(e.get("key"))):
        raise Refused(f"{where}.key: {problem}")
    op = e.get("operator")
    if op not in operators:
        raise Refused(f"{where}.operator: {op!r} is not one; use {', '.join(operators)}")
    values = _list(e.get("values") or [], f"{where}.values")
    if op in ("In", "NotIn") and not values:
        raise Refused(f"{where}.values: {op} needs at least one value")
    if op in ("Exists", "DoesNotExist") and values:
        raise Refused(f"{where}.values: {op} takes no values; drop them")
    if op in ("Gt", "Lt") and (len(values) != 1 or not re.fullmatch(r"-?\d+", str(values[0]))):
        raise Refused(f"{where}.values: {op} takes one integer value")
    if not node:
        for v in values:
            if problem := label_value_problem(v):
                raise Refused(f"{where}.values: {problem}")


def _selector(raw: Any, where: str) -> None:
    sel = _keys(raw, ("matchLabels", "matchExpressions"), where)
    labels = sel.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise Refused(f"{where}.matchLabels: give a mapping of label key to value")
    check_labels(labels, f"{where}.matchLabels")
    for i, e in enumerate(_list(sel.get("matchExpressions") or [], f"{where}.matchExpressions")):
        _expression(e, _POD_OPERATORS, f"{where}.matchExpressions.{i}", node=False)


def _pod_term(raw: Any, where: str) -> None:
    term = _keys(raw, _TERM_KEYS, where)
    key = term.get("topologyKey")
    if not key:
        raise Refused(f"{where}.topologyKey: required (kubernetes.io/hostname: the same node)")
    if problem := label_key_problem(key):
        raise Refused(f"{where}.topologyKey: {problem}")
    for field in ("labelSelector", "namespaceSelector"):
        if term.get(field) is not None:
            _selector(term[field], f"{where}.{field}")
    for i, ns in enumerate(_list(term.get("namespaces") or [], f"{where}.namespaces")):
        check_namespace(ns, f"{where}.namespaces.{i}")
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        for k in _list(term.get(field) or [], f"{where}.{field}"):
            if problem := label_key_problem(k):
                raise Refused(f"{where}.{field}: {problem}")


def _weighted(raw: Any, inner: str, where: str) -> Any:
    w = _keys(raw, ("weight", inner), where)
    weight = w.get("weight")
    if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
        raise Refused(f"{where}.weight: an integer from 1 to 100")
    if inner not in w:
        raise Refused(f"{where}.{inner}: required")
    return w[inner]


def _node_term(raw: Any, where: str) -> None:
    term = _keys(raw, ("matchExpressions", "matchFields"), where)
    for field in ("matchExpressions", "matchFields"):
        for i, e in enumerate(_list(term.get(field) or [], f"{where}.{field}")):
            _expression(e, _NODE_OPERATORS, f"{where}.{field}.{i}", node=True)
            if field == "matchFields" and e.get("key") != "metadata.name":
                raise Refused(f"{where}.matchFields.{i}.key: only metadata.name")


def check_affinity(affinity: Any, where: str) -> None:
    """Refuse (Refused) what the API server would refuse in a pod's spec.affinity."""
    aff = _keys(affinity, ("nodeAffinity", "podAffinity", "podAntiAffinity"), where)
    for kind in ("podAffinity", "podAntiAffinity"):
        if aff.get(kind) is None:
            continue
        spec = _keys(aff[kind], (REQUIRED, PREFERRED), f"{where}.{kind}")
        for i, t in enumerate(_list(spec.get(REQUIRED) or [], f"{where}.{kind}.{REQUIRED}")):
            _pod_term(t, f"{where}.{kind}.{REQUIRED}.{i}")
        for i, t in enumerate(_list(spec.get(PREFERRED) or [], f"{where}.{kind}.{PREFERRED}")):
            at = f"{where}.{kind}.{PREFERRED}.{i}"
            _pod_term(_weighted(t, "podAffinityTerm", at), f"{at}.podAffinityTerm")
    if aff.get("nodeAffinity") is not None:
        spec = _keys(aff["nodeAffinity"], (REQUIRED, PREFERRED), f"{where}.nodeAffinity")
        if spec.get(REQUIRED) is not None:
            sel = _keys(spec[REQUIRED], ("nodeSelectorTerms",), f"{where}.nodeAffinity.{REQUIRED}")
            terms = _list(sel.get("nodeSelectorTerms"), f"{where}.nodeAffinity.{REQUIRED}.nodeSelectorTerms")
            if not terms:
                raise Refused(f"{where}.nodeAffinity.{REQUIRED}.nodeSelectorTerms: give at least one term")
            for i, t in enumerate(terms):
                _node_term(t, f"{where}.nodeAffinity.{REQUIRED}.nodeSelectorTerms.{i}")
        for i, t in enumerate(_list(spec.get(PREFERRED) or [], f"{where}.nodeAffinity.{PREFERRED}")):
            at = f"{where}.nodeAffinity.{PREFERRED}.{i}"
            _node_term(_weighted(t, "preference", at), f"{at}.preference")
