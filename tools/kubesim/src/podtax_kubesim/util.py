"""Small shared helpers: JSON, timestamps, names, quantities and Status objects."""

from __future__ import annotations

import copy
import datetime as dt
import random
import re
import time
import uuid
from typing import Any

import orjson

Obj = dict[str, Any]

KUBE_VERSION = "v1.30.0"  # the Kubernetes kubesim answers as: /version and its OpenAPI document say it alike
SIM_VERSION = f"{KUBE_VERSION}-podtax-kubesim"
SIMULATED_ANNOTATION = "podtax.io/simulated"
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def deepcopy(obj: Obj) -> Obj:
    """A deep copy of a JSON-compatible object (an orjson round trip: ~10x faster than copy.deepcopy)."""
    return orjson.loads(orjson.dumps(obj))


_now_cache: list = [0, ""]


def now() -> str:
    """RFC 3339 time with second precision, as Kubernetes writes metav1.Time (cached per second)."""
    second = int(time.time())
    if _now_cache[0] != second:
        _now_cache[0], _now_cache[1] = second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
    return _now_cache[1]


def now_micro() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def new_uid() -> str:
    return str(uuid.uuid4())


def random_suffix(n: int = 5) -> str:
    return "".join(random.choice(_NAME_CHARS) for _ in range(n))


_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIX = {
    "": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}


def quantity(value: Any) -> float:
    """A Kubernetes resource quantity ("500m", "2Gi", 3) as a float of base units."""
    if isinstance(value, int | float):
        return float(value)
    match = _QUANTITY.match(str(value).strip())
    if not match or match.group(2) not in _SUFFIX:
        raise ValueError(f"invalid quantity {value!r}")
    return float(match.group(1)) * _SUFFIX[match.group(2)]


def status(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    obj: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Success" if code < 400 else "Failure", "message": message,
                **({"reason": reason} if reason else {}), "code": code}  # none: StatusReasonUnknown, omitted
    if details:
        obj["details"] = details
    return obj


class ApiError(Exception):
    """Raised by handlers and the store; rendered as a Kubernetes Status object."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def to_status(self) -> Obj:
        return status(self.code, self.reason, self.message, self.details)


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(404, "NotFound", f'{qualified} "{name}" not found',
                    {"name": name, "group": group, "kind": resource})


def conflict(resource: str, name: str, why: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified} "{name}": {why}',
                    {"name": name, "group": group, "kind": resource})


def invalid(kind: str, name: str, message: str) -> ApiError:
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {message}', {"name": name, "kind": kind})


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (also used, simplified, for strategic merge patches)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):  # strategic-merge directives ($patch, $retainKeys...) are ignored
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, ops: list[Obj]) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, test, copy, move)."""
    doc = copy.deepcopy(target)

    def walk(path: str) -> tuple[Any, str | int]:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
        node = doc
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        last: str | int = parts[-1]
        if isinstance(node, list):
            last = len(node) if last == "-" else int(last)
        return node, last

    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        try:
            parent, key = walk(path)
            if kind == "test":
                if parent[key] != op.get("value"):
                    raise ApiError(422, "Invalid", f"test operation failed at {path}")
            elif kind == "remove":
                del parent[key]
            elif kind in ("add", "replace", "copy", "move"):
                if kind in ("copy", "move"):
                    src_parent, src_key = walk(op["from"])
                    value = copy.deepcopy(src_parent[src_key])
                    if kind == "move":
                        del src_parent[src_key]
                else:
                    value = copy.deepcopy(op.get("value"))
                if isinstance(parent, list) and kind != "replace":
                    parent.insert(key, value)  # type: ignore[arg-type]
                else:
                    parent[key] = value
            else:
                raise ApiError(400, "BadRequest", f"unknown JSON patch operation {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(422, "Invalid", f"JSON patch {kind} {path} failed: {exc}") from exc
    return doc
