"""What Kubernetes accepts in a campaign's pod and node fields, checked when the file is read.

Kubernetes refuses a bad quantity, resource name, namespace or label selector only when the runner
creates the first Job, hours into a campaign; these checks say the same at submit time, with the fix.
Each function returns None, or a sentence naming what is wrong and what is allowed.
"""

from __future__ import annotations

import re
from decimal import Decimal

_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?")
_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "n": Decimal("1e-9"),
           "u": Decimal("1e-6"), "m": Decimal("0.001"), "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
           "P": 10**15, "E": 10**18}
_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
DNS_LABEL = re.compile(_LABEL)
_DOMAIN = rf"{_LABEL}(\.{_LABEL})*"
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = rf"({_DOMAIN}/)?{_NAME}"
_VALUE = rf"({_NAME})?"
_REQUIREMENT = re.compile(
    rf"\s*(!\s*{_KEY}|{_KEY}\s*((==?|!=)\s*{_VALUE}|\s(in|notin)\s*\(\s*{_VALUE}(\s*,\s*{_VALUE})*\s*\)|[<>]\s*[0-9]+)?)\s*")
_EXTENDED = re.compile(rf"{_DOMAIN}/{_NAME}")  # nvidia.com/gpu: a device plugin's resource
RESOURCES = ("cpu, memory, ephemeral-storage, hugepages-<size> (hugepages-2Mi) or a device plugin's "
             "<domain>/<name> (nvidia.com/gpu)")
_FORMS = {"cpu": "cores (1, 1.5) or millicores (500m)",
          "bytes": "bytes with an optional suffix (256Mi, 1Gi, 512M, 1000000)",
          "count": "a whole number (1, 2)"}


def quantity(text: str) -> Decimal | None:
    """A Kubernetes quantity's value (`500m` -> 0.5, `1Ki` -> 1024); None when it is not one (or is negative)."""
    m = _QUANTITY.fullmatch(text)
    if not m:
        return None
    suffix = m.group(2) or ""
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(m.group(1)) * Decimal(10) ** int(suffix[1:])
        return Decimal(m.group(1)) * Decimal(_SUFFIX[suffix])
    except ArithmeticError:  # InvalidOperation, or past what a Decimal holds
        return None


def _kind(name: str) -> str | None:
    if name == "cpu":
        return "cpu"
    if name in ("memory", "ephemeral-storage"):
        return "bytes"
    if name.startswith("hugepages-"):
        return "bytes" if quantity(name.removeprefix("hugepages-")) else None
    return "count" if _EXTENDED.fullmatch(name) else None


def resource_problem(name: str, value: str) -> str | None:
    """Why `name: value` is not a resource Kubernetes takes in a container's requests or limits."""
    kind = _kind(name)
    if kind is None:
        return f"{name!r} is not a resource Kubernetes knows: use {RESOURCES}"
    amount = quantity(value)
    if amount is None or amount <= 0:
        what = "negative" if value.strip().startswith("-") else "zero" if amount == 0 else "not a quantity"
        return f"{value[:40]!r} is {what}: write {name} as {_FORMS[kind]}, more than 0"
    if kind == "cpu" and amount % Decimal("0.001"):
        return f"{value!r} is finer than Kubernetes counts CPU (1m = 0.001 core): write {_FORMS[kind]}"
    if kind != "cpu" and amount % 1:
        return f"{value!r} is not a whole number of {'bytes' if kind == 'bytes' else name}: write {_FORMS[kind]}"
    return None


def resources_problem(requests: dict[str, str], limits: dict[str, str]) -> tuple[str, str, str] | None:
    """(problem, `requests` or `limits`, resource) for the first resource Kubernetes would refuse, or None."""
    for where, resources in (("requests", requests), ("limits", limits)):
        for name, value in resources.items():
            if problem := resource_problem(name, value):
                return problem, where, name
    for name in sorted(requests.keys() & limits.keys()):
        request, limit = quantity(requests[name]) or 0, quantity(limits[name]) or 0
        # huge pages and device plugin resources are never overcommitted: request and limit must match
        equal = _kind(name) != "cpu" and name not in ("memory", "ephemeral-storage")
        if request > limit or (equal and request != limit):
            return (f"the request {requests[name]!r} must be {'equal to' if equal else 'at most'} the limit "
                    f"(pod.limits.{name}: {limits[name]!r}); Kubernetes refuses the pod", "requests", name)
    return None


def namespace_problem(name: str) -> str | None:
    if DNS_LABEL.fullmatch(name):
        return None
    return (f"{name[:70]!r} is not a namespace name: lowercase letters, digits and '-', starting and ending "
            f"with a letter or digit, at most 63 (a DNS-1123 label, e.g. podtax-bench)")


def selector_problem(selector: str) -> str | None:
    """Why `selector` is not a Kubernetes label selector (`kubernetes.io/arch=arm64,tier in (a,b),!gpu`)."""
    for part in re.split(r",(?![^()]*\))", selector):
        if not _REQUIREMENT.fullmatch(part):
            return (f"{part.strip()[:60]!r} is not a label selector requirement: write key=value, key!=value, "
                    f"key in (a,b), key notin (a,b), key or !key, joined by commas (e.g. kubernetes.io/arch=arm64)")
    return None


_PART = re.compile(r"\s*(!?)\s*([^\s=!<>(),]+)\s*(?:(==?|!=|<|>)\s*([^\s,]*)|\s(in|notin)\s*\(([^)]*)\))?\s*")


def selector_matches(selector: str, labels: dict[str, str]) -> bool:
    """Whether a node with `labels` matches the label selector `selector` (checked by selector_problem)."""
    for part in re.split(r",(?![^()]*\))", selector):
        m = _PART.fullmatch(part)
        if m is None:
            return False
        neg, key, op, value, set_op, values = m.groups()
        have = labels.get(key)
        if set_op:
            ok = (have in {v.strip() for v in values.split(",")}) == (set_op == "in")
        elif op in ("=", "=="):
            ok = have == value
        elif op == "!=":
            ok = have != value
        elif op in ("<", ">"):
            ok = have is not None and have.lstrip("-").isdigit() and (int(have) < int(value)) == (op == "<") \
                and int(have) != int(value)
        else:
            ok = (have is None) if neg else (have is not None)
        if not ok:
            return False
    return True
