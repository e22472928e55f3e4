"""List pagination (`limit`, `continue`) as a real API server's etcd3 store serves it.

A paged list reads one snapshot: the first page is read at the current resourceVersion, and its `continue` token
carries that version and the key after the last item returned, so every following page lists from there AT THE SAME
VERSION (objects created, changed or deleted since do not show; the deleted still do, as they were). Items come in
etcd key order: `<namespace>/<name>` for a list of all namespaces, `<name>` within one namespace or for a
cluster-scoped resource. A page holds at most `limit` items; with a label or field selector the store reads on
until `limit` items match or the range ends, so a page may say there is more when nothing more matches (the next
page is then empty). `metadata.remainingItemCount` is given only without selectors, as the API server does.

The token is the API server's own (base64url, unpadded, of {"v": "meta.k8s.io/v1", "rv": N, "start": key}): opaque
to clients, decodable here. A malformed token is 400 BadRequest ("invalid continue token: continue key is not
valid: ..."), as is a `resourceVersion` other than "" or "0" beside a token. A token whose snapshot is older than the
history the store keeps (its `history` writes, or `compact()`: as etcd's compaction) is 410 Expired with the API
server's message and, in the Status's `metadata.continue`, a token that goes on at the latest version (rv -1: an
inconsistent remainder, as the real one offers). Without a token, `limit` pages only when `resourceVersion` is not
"0": a list at "0" is served whole, as the watch cache of a 1.30 API server serves it, ignoring `limit`.

A `resourceVersion` that is not an unsigned 64-bit decimal (APIObjectVersioner.ParseResourceVersion) is answered as a
1.30 API server answers it (kubernetes/apiserver release-1.30): on a list etcd serves (a `limit` with a version other
than "0", or resourceVersionMatch Exact: Cacher.GetList delegates it) 400 BadRequest "invalid resource version:
resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax" (the etcd3 store's
resolveGetListRev); on a list the watch cache serves (no `limit`, or NotOlderThan), a watch or a get, the cache returns
the parse error itself, which is no API status: 500 with that message and no reason (malformed()). (From 1.33 the
cache's delegator runs storage.ValidateListOptions first, so every list gets the 400.)

`resourceVersionMatch` is checked first, as the API server's ValidateListOptions does: 422 Invalid (ListOptions) when
it comes without `resourceVersion`, beside a `continue` token, is neither Exact nor NotOlderThan, or is Exact with
`resourceVersion` "0" (on a watch, any `resourceVersionMatch` is refused). A `resourceVersion` not reached yet is 504
"Timeout: Too large resource version: N, current: M": at once where etcd serves the list (a limit or Exact), with
retryAfterSeconds 1 where the watch cache does (NotOlderThan or no match, without a limit; the real cache first
waits 3 s for the version to come, kubesim's store is always at its latest version and answers at once).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import re
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from podtax_kubesim.selectors import Matcher
from podtax_kubesim.store import Key, Store, list_key
from podtax_kubesim.util import ApiError, Obj, dumps

TOKEN_VERSION = "meta.k8s.io/v1"
LATEST = -1  # a token's rv meaning "go on at the latest version" (offered with a 410 Expired)
INCONSISTENT = ("The provided continue parameter is too old to display a consistent list result. You can start a "
                "new list without the continue parameter, or use the continue token in this response to retrieve the "
                "remainder of the results. Continuing with the provided token results in an inconsistent list - "
                "objects that were created, modified, or deleted between the time the first chunk was returned and "
                "now may show up in the list.")
TOO_OLD = "The resourceVersion for the provided list is too old."
MATCHES = ("Exact", "NotOlderThan")
CACHE_RETRY_SECONDS = 1  # the watch cache's retryAfterSeconds for a version it has not reached
_NOT_B64URL = re.compile(r"[^A-Za-z0-9_-]")
_DECIMAL = re.compile(r"[0-9]+")
_MAX_RV = 2**64 - 1
_ORDERS = 8  # key orders kept per store: one per recent snapshot (resource, namespace, version) being paged
_orders: weakref.WeakKeyDictionary[Store, OrderedDict[tuple[str, str | None, int], list[tuple[str, Key]]]] = \
    weakref.WeakKeyDictionary()


class ExpiredContinue(ApiError):
    """410 Expired for a token whose snapshot is compacted away; its Status carries the token to go on with."""

    def __init__(self, token: str) -> None:
        super().__init__(410, "Expired", INCONSISTENT)
        self.token = token

    def to_status(self) -> Obj:
        out = super().to_status()
        out["metadata"] = {"continue": self.token}
        return out


@dataclass(frozen=True, slots=True)
class Params:
    limit: int  # 0: no limit
    token: str
    rv: str
    rv_match: str


@dataclass(frozen=True, slots=True)
class Page:
    rows: list[tuple[Obj, bytes | None]]  # each item, with its stored JSON when that is what is served
    rv: int  # the snapshot's resourceVersion
    next: str  # the continue token, "" on the last page
    remaining: int | None  # items after this page (without selectors only)


def match_errors(query: Mapping[str, str], watch: bool = False) -> list[tuple[str, str]]:
    """(cause type, message) of each rule a list's (or a watch's) `resourceVersionMatch` breaks, in the order the
    API server's ValidateListOptions checks them."""
    match = query.get("resourceVersionMatch", "")
    if not match:
        return []
    forbidden = "FieldValueForbidden"
    if watch:
        return [(forbidden, "Forbidden: resourceVersionMatch is forbidden for watch")]
    rv = query.get("resourceVersion", "")
    errs = []
    if not rv:
        errs.append((forbidden, "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"))
    if query.get("continue", ""):
        errs.append((forbidden, "Forbidden: resourceVersionMatch is forbidden when continue is provided"))
    if match not in MATCHES:
        errs.append(("FieldValueNotSupported", f"Unsupported value: {json.dumps(match)}: supported values: "
                     '"Exact", "NotOlderThan", ""'))
    if match == "Exact" and rv == "0":
        errs.append((forbidden, 'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    return errs


def validate(query: Mapping[str, str], watch: bool = False) -> None:
    """422 Invalid, in the API server's words, for a `resourceVersionMatch` it refuses (match_errors)."""
    errs = match_errors(query, watch)
    if not errs:
        return
    said = [f"resourceVersionMatch: {body}" for body in dict.fromkeys(body for _, body in errs)]
    causes = [{"reason": kind, "message": body, "field": "resourceVersionMatch"} for kind, body in errs]
    raise ApiError(422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: '
                   + (said[0] if len(said) == 1 else f"[{', '.join(said)}]"),
                   {"group": "meta.k8s.io", "kind": "ListOptions", "causes": causes})


def too_large(rv: int, current: int, retry_seconds: int = 0) -> ApiError:
    """504 for a list at a version the store has not reached, as storage.NewTooLargeResourceVersionError."""
    details: Obj = {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]}
    if retry_seconds:
        details["retryAfterSeconds"] = retry_seconds
    return ApiError(504, "Timeout", f"Timeout: Too large resource version: {rv}, current: {current}", details)


def malformed(raw: str) -> str | None:
    """The API server's words (its ParseResourceVersion's field error) for a `resourceVersion` that is not one:
    anything but an unsigned 64-bit decimal ("" and "0" mean none); None for one that is."""
    if not raw or (_DECIMAL.fullmatch(raw) and int(raw) <= _MAX_RV):
        return None
    why = "value out of range" if _DECIMAL.fullmatch(raw) else "invalid syntax"
    quoted = json.dumps(raw, ensure_ascii=False)  # Go's %q, for the printable text a query carries
    return f"resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {why}"


def check_version(query: Mapping[str, str]) -> None:
    """400 BadRequest for the malformed `resourceVersion` of a list etcd serves (params() not None; beside a continue
    token, the token's rules answer)."""
    if not query.get("continue", "") and (why := malformed(query.get("resourceVersion", ""))):
        raise ApiError(400, "BadRequest", f"invalid resource version: {why}")


def check_cached_version(raw: str) -> None:
    """The malformed `resourceVersion` of a watch, a get or a list the watch cache serves: the cache's parse error,
    no API status, so 500."""
    if why := malformed(raw):
        raise ApiError(500, "", why)


def check_cached(store: Store, query: Mapping[str, str]) -> None:
    """For a list served whole (the watch cache's path): 504 when its `resourceVersion` is one not reached yet."""
    raw = query.get("resourceVersion", "")
    if raw.isdigit() and int(raw) > store.rv:
        raise too_large(int(raw), store.rv, CACHE_RETRY_SECONDS)


def params(query: Mapping[str, str]) -> Params | None:
    """The paging asked for by a list's query, or None for a list served whole (the emulator's plain path)."""
    raw_limit = query.get("limit", "")
    try:
        limit = int(raw_limit) if raw_limit else 0
    except ValueError:
        raise ApiError(400, "BadRequest", f'limit: Invalid value: "{raw_limit}": must be an integer') from None
    p = Params(max(limit, 0), query.get("continue", ""), query.get("resourceVersion", ""),
               query.get("resourceVersionMatch", ""))
    if p.token or p.rv_match == "Exact" or (p.limit and p.rv != "0"):
        return p
    return None


def encode(start: str, rv: int) -> str:
    data = json.dumps({"v": TOKEN_VERSION, "rv": rv, "start": start}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _invalid(why: str) -> ApiError:
    return ApiError(400, "BadRequest", f"invalid continue token: continue key is not valid{why}")


def decode(token: str) -> tuple[str, int]:
    """(start key, rv) of a continue token; 400 BadRequest in the API server's words when it is not one."""
    wrong = _NOT_B64URL.search(token)
    bad = wrong.start() if wrong else len(token) - 1 if len(token) % 4 == 1 else None
    if bad is not None:
        raise _invalid(f": illegal base64 data at input byte {bad}")
    try:
        doc = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, binascii.Error) as exc:
        raise _invalid(f": {exc}") from None
    if not isinstance(doc, dict):
        raise _invalid(": json: cannot unmarshal into Go value of type storage.continueToken")
    fields = {str(k).lower(): v for k, v in doc.items()}  # encoding/json matches field names case-insensitively
    version, rv, start = fields.get("v", ""), fields.get("rv", 0), fields.get("start", "")
    if not isinstance(rv, int) or isinstance(rv, bool) or not isinstance(start, str) or not isinstance(version, str):
        raise _invalid(": json: cannot unmarshal a field of storage.continueToken")
    if version != TOKEN_VERSION:
        raise _invalid(f": server does not recognize this encoded version {version}")
    if rv == 0:
        raise _invalid(": incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if not start:
        raise _invalid(": encoded start key empty (version meta.k8s.io/v1)")
    rooted = start if start.startswith("/") else "/" + start
    parts = rooted[1:].split("/")
    if rooted != "/" and ("" in parts or "." in parts or ".." in parts):  # Go's path.Clean would change it
        raise _invalid(f": {start}")
    return rooted[1:], rv


def _snapshot_rv(store: Store, p: Params) -> tuple[int, str]:
    """(the version to read at, the start key) for `p`; raises what the API server answers for a bad request."""
    if p.token:
        start, rv = decode(p.token)
        if p.rv not in ("", "0"):
            raise ApiError(400, "BadRequest", "specifying resource version is not allowed when using continue")
        if rv == LATEST or rv < 0:
            return store.rv, start
        if rv < store.compacted_rv:
            raise ExpiredContinue(encode(start, LATEST))
        return rv, start
    if p.rv and p.rv_match == "NotOlderThan":  # at least that version: the latest, once etcd has reached it
        if p.rv.isdigit() and int(p.rv) > store.rv:
            raise too_large(int(p.rv), store.rv)
        return store.rv, ""
    if p.rv:  # "Exact", or the legacy meaning of a version beside a limit
        check_version({"resourceVersion": p.rv})
        rv = int(p.rv)
        if rv > 0:
            if rv < store.compacted_rv:
                raise ApiError(410, "Expired", TOO_OLD)
            return rv, ""
    return store.rv, ""


def read(store: Store, key: str, namespace: str | None, p: Params, match: Matcher | None,
         view: Callable[[Obj], Obj] | None = None) -> Page:
    """One page of the objects of store `key` (of `namespace`, or all when None) at the snapshot `p` names, matched
    by `match` after `view` (a storage view's output form) when given."""
    rv, start = _snapshot_rv(store, p)
    if rv > store.rv:
        raise too_large(rv, store.rv)
    objs = store.objects_at(key, rv)
    if objs is None:  # a version still reachable a moment ago: the same answer as a compacted token
        raise ExpiredContinue(encode(start, LATEST)) if p.token else ApiError(410, "Expired", TOO_OLD)
    raws = store.raw.get(key, {})
    current = store.objects.get(key, {})
    ordered = _order(store, key, namespace, rv, objs)
    first = bisect.bisect_left(ordered, (start,)) if start else 0
    rows: list[tuple[Obj, bytes | None]] = []
    last = first
    for i in range(first, len(ordered)):
        if p.limit and len(rows) >= p.limit:
            break
        last = i + 1
        obj = objs[ordered[i][1]]
        shown = view(obj) if view else obj
        if match is None or match(shown):
            raw = raws.get(ordered[i][1]) if view is None and current.get(ordered[i][1]) is obj else None
            rows.append((shown, raw))
    more = last < len(ordered)
    token = encode(ordered[last - 1][0] + "\x00", rv) if more else ""
    remaining = len(ordered) - last if more and match is None else None
    return Page(rows, rv, token, remaining)


def _order(store: Store, key: str, namespace: str | None, rv: int, objs: dict[Key, Obj]) -> list[tuple[str, Key]]:
    """The keys of snapshot `objs` (of `namespace`) in etcd order; kept for the next pages, as a snapshot (one
    version of one resource) never changes."""
    cache = _orders.setdefault(store, OrderedDict())
    ordered = cache.get((key, namespace, rv))
    if ordered is None:
        ordered = sorted((list_key(k, namespace), k) for k in objs if namespace is None or k[0] == namespace)
        cache[(key, namespace, rv)] = ordered
        while len(cache) > _ORDERS:
            cache.popitem(last=False)
    else:
        cache.move_to_end((key, namespace, rv))
    return ordered


def body(kind: str, api_version: str, page: Page) -> bytes:
    """The JSON of a <Kind>List holding `page`, the stored JSON of each item spliced in when there is one."""
    head = dumps({"kind": kind, "apiVersion": api_version, "metadata": list_meta(page)})
    items = b",".join(raw if raw is not None else dumps(obj) for obj, raw in page.rows)
    return head[:-1] + b',"items":[' + items + b"]}"


def list_meta(page: Page) -> Obj:
    meta: Obj = {"resourceVersion": str(page.rv)}
    if page.next:
        meta["continue"] = page.next
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    return meta
