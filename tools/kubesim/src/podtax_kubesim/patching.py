"""Patch bodies: JSON merge patch, strategic merge patch (merge keys for the lists podtax touches),
and JSON patch."""

from __future__ import annotations

import copy
from typing import Any

from podtax_kubesim.util import ApiError, json_patch, merge_patch

MERGE_KEYS = {
    "conditions": "type", "containers": "name", "initContainers": "name", "containerStatuses": "name",
    "initContainerStatuses": "name", "volumes": "name", "env": "name", "volumeMounts": "mountPath",
    "ownerReferences": "uid", "addresses": "type", "taints": "key", "imagePullSecrets": "name",
    "ports": "containerPort",
}


def strategic_merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return merge_patch(target, patch)
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    result = dict(target)
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif key in MERGE_KEYS and isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(result[key], value, MERGE_KEYS[key])
        elif isinstance(value, dict):
            result[key] = strategic_merge(result.get(key) if isinstance(result.get(key), dict) else {}, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _merge_list(current: list, patch: list, merge_key: str) -> list:
    out = [copy.deepcopy(x) for x in current]
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            return copy.deepcopy(patch)  # not a keyed list after all: replace
        index = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(merge_key) == item[merge_key]),
                     None)
        if item.get("$patch") == "delete":
            if index is not None:
                out.pop(index)
        elif index is None:
            out.append(strategic_merge({}, item))
        else:
            out[index] = strategic_merge(out[index], item)
    return out


def apply(doc: Any, body: Any, content_type: str) -> Any:
    ctype = content_type.split(";")[0].strip()
    if ctype == "application/json-patch+json":
        if not isinstance(body, list):
            raise ApiError(400, "BadRequest", "a JSON patch must be a list of operations")
        return json_patch(doc, body)
    if ctype == "application/merge-patch+json":
        return merge_patch(doc, body)
    if ctype == "application/strategic-merge-patch+json":
        return strategic_merge(doc, body)
    if ctype == "application/apply-patch+yaml":
        return strategic_merge(doc, body)  # server-side apply, approximated as a strategic merge
    raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {ctype}")
