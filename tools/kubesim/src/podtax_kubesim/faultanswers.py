"""The answers of kubesim's refusing faults (faults.py), worded as a real API server words them: failCreates' Status
by its code, forbid's RBAC refusal."""

from __future__ import annotations

from urllib.parse import unquote

from podtax_kubesim.faults import FailCreate, Faults
from podtax_kubesim.metrics import RequestInfo
from podtax_kubesim.util import ApiError, Obj

# the RBAC verb of a request (its metrics verb: request_info)
RBAC_VERBS = {"POST": "create", "PUT": "update", "APPLY": "patch"}


# a Status's reason by its code, as apimachinery's StatusError constructors give it (NewForbidden, NewTooManyRequests,
# NewInternalError, NewServiceUnavailable, NewTimeoutError ...); a code not here: BadRequest or InternalError
REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
           409: "AlreadyExists", 410: "Expired", 413: "RequestEntityTooLarge", 415: "UnsupportedMediaType",
           422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


def failed_create(entry: FailCreate, plural: str, namespace: str | None, name: str, op: str = "create") -> ApiError:
    """The answer of fault failCreates (failDeletes: `op` "delete"): a Status as a real API server words that code
    (403: RBAC's sentence)."""
    reason = REASONS.get(entry.status, "InternalError" if entry.status >= 500 else "BadRequest")
    details: Obj = {"name": name, "kind": plural}
    if entry.retry_after:
        details["retryAfterSeconds"] = entry.retry_after
    where = f' in the namespace "{namespace}"' if namespace else ""
    fault = "failCreates" if op == "create" else "failDeletes"
    message = {403: f'{plural} "{name}" is forbidden: User "podtax-kubesim" cannot {op} resource "{plural}" in API '
                    f'group ""{where} (podtax kubesim fault {fault})' if op != "create" else
                    f'{plural} is forbidden: User "podtax-kubesim" cannot create resource "{plural}" in API group '
                    f'""{where} (podtax kubesim fault failCreates)',
               429: f"Too many requests, please try again later. (podtax kubesim fault {fault})",
               504: f"Timeout: request did not complete within requested timeout - context deadline exceeded "
                    f"(podtax kubesim fault {fault})"}.get(
        entry.status, f"{op} of {plural} {name} failed (podtax kubesim fault {fault})")
    return ApiError(entry.status, reason, message, details)


def namespace_of(path: str) -> str:
    """The namespace a request's path names ('' for a cluster-scoped one)."""
    parts = [unquote(p) for p in path.strip("/").split("/") if p]
    return parts[parts.index("namespaces") + 1] if "namespaces" in parts[:-1] else ""


def forbidden(faults: Faults, info: RequestInfo, namespace: str) -> ApiError | None:
    """Fault forbid: the 403 RBAC answers a request whose user has no role for its verb on its resource
    (apiserver's forbiddenMessage), else None."""
    verb = RBAC_VERBS.get(info.verb, info.verb.lower())
    if not faults.forbids(verb, info.resource):
        return None
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return ApiError(403, "Forbidden", f'{info.resource} is forbidden: User "podtax-kubesim" cannot {verb} resource '
                    f'"{info.resource}" in API group "{info.group}" {where} (podtax kubesim fault forbid)',
                    {"kind": info.resource})
