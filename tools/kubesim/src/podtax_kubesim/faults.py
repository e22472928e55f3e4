"""Fault knobs of the cluster file (``faults:``), nomadsim's too: a create or delete that never answers; kubesim's
own: a watch that drops, a list that never answers.

    faults:
      hangCreates: ["persistentvolumeclaims/-0003"]   # POST of a claim whose name ends so: no answer
      hangDeletes: ["-0005"]                           # DELETE of any object whose name ends so: no answer
      dropWatches: [{resource: persistentvolumes, afterEvents: 3, downSeconds: 2}]
      hangLists: ["persistentvolumes"]                 # a list (not a watch) of that resource: no answer
      failCreates: [{match: "jobs/", status: 500, times: 2}]   # the first 2 POSTs of a Job: a 500 Status
      failDeletes: [{match: "persistentvolumeclaims/", status: 429, times: 0}]   # every claim's DELETE: throttled

An entry is a name ending, or ``<resource plural>/<name ending>`` to hang only that resource's calls. The
request is read and then held, unanswered and without effect (the object is not created, or not deleted),
until the client gives up (its read timeout) or the emulator stops (503); other requests go on. A real API
server behind an overloaded etcd or a stuck admission webhook times such calls out after 60 s or more.
nomadsim reads the same knobs (its volume IDs are the names, its resource ``volumes``) beside its own
``refuseCreatesAfter`` (``parse``'s `extra`).

A ``dropWatches`` entry (kubesim's: it passes ``DROP`` in `extra`; nomadsim has no watches) drops one watch
stream of a resource, once: the first of its streams to deliver ``afterEvents`` events (bookmarks not counted) is
closed after them, and for ``downSeconds`` after that the resource's watch requests are refused (503), as while an
API server restarts; its lists still answer. With ``silent: true`` the stream is not closed: it stays open and
delivers nothing more, neither events nor bookmarks, until its ``timeoutSeconds`` or the client hangs up, as a
half-open connection (an API server restarted or upgraded behind a load balancer that kept the client's side; a real
API server sends a watch that asked for them a bookmark every minute, so a client hears from a live watch at least that
often: client-go's HTTP/2 health check closes a connection silent for 30 s + 15 s).
A ``hangLists`` entry (kubesim's: ``HANG_LISTS`` in `extra`) is a resource plural whose lists (GET of the
collection, not a watch, in a namespace or all) are held unanswered as a hung create is.
A ``failCreates`` entry (kubesim's: ``FAIL`` in `extra`) answers the first ``times`` creates matching
``match`` (a name ending, or ``<plural>/<ending>``; an empty ending matches every name) with ``status`` (4xx or 5xx, a
Kubernetes Status with the real API server's reason: 403 Forbidden, 429 TooManyRequests, 500 InternalError ...) and
creates nothing (``stored: true``: creates it all the same, then answers so, as an API server whose timeout filter
answers 504 ``Timeout: request did not complete within requested timeout`` while the write goes on and commits, or
whose etcd answered a write it committed 'request timed out'); ``times: 0`` fails every one, as an API server
whose etcd is down (``bindings/<pod name ending>`` matches a pod's binding, which then binds nothing: the built-in
default-scheduler's too, as kube-scheduler binds through the API server).
``retryAfter`` (seconds; 1 for a 429 unless given, as the API server's max-in-flight and priority-and-fairness
filters say, else none) goes in the Status's ``details.retryAfterSeconds`` and the ``Retry-After`` header, as
apimachinery's ErrorNegotiated writes it.
A ``failDeletes`` entry (kubesim's: ``FAIL_DELETES`` in `extra`) does the same to DELETEs of one object, which then
deletes nothing.
Entries are tried in order: a call goes to the first matching entry that has not answered its ``times`` yet, so
entries of one object plant a sequence of answers (its first create 429, its second 500, its third made)::

      failCreates: [{match: "persistentvolumeclaims/-0002", status: 429, times: 1},
                    {match: "persistentvolumeclaims/-0002", status: 500, times: 1}]

An entry after one with ``times: 0`` (every call) that matches every call it does (the same ``match``, or a
broader one: ``persistentvolumeclaims/`` before ``persistentvolumeclaims/-0002``, ``-0002`` before
``persistentvolumeclaims/-0002``) would never answer: refused, naming both (before, only the same ``match`` was).
(Before, the first matching entry decided alone: once it had answered its ``times``, the object's calls went through,
and a 429 then a 500 on one object could not be planted.)
A ``forbid`` entry (kubesim's: ``FORBID`` in `extra`), '<verb> <resource plural>' with an RBAC verb
(get, list, watch, create, update, patch, delete, deletecollection), is refused as RBAC refuses a request its user
has no role for (faultanswers.py): 403 Forbidden, ``persistentvolumes is forbidden: User "..." cannot
list resource "persistentvolumes" in API group "" at the cluster scope``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

KEYS = {"create": "hangCreates", "delete": "hangDeletes"}
DROP = "dropWatches"
HANG_LISTS = "hangLists"
FAIL = "failCreates"
FAIL_DELETES = "failDeletes"
FORBID = "forbid"
RBAC_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True)
class FailCreate:
    match: str  # a name ending, or <plural>/<ending>
    status: int
    times: int  # 0: every matching create
    retry_after: int = 0  # seconds, the Status's details.retryAfterSeconds and the Retry-After header (0: none)
    stored: bool = False  # the create (delete) is done, and then answered with `status` all the same


@dataclass(frozen=True)
class DropWatch:
    resource: str  # the plural: persistentvolumes
    after_events: int
    down_s: float
    silent: bool = False  # the stream is not closed: it stays open and delivers nothing more (a half-open connection)


@dataclass(frozen=True)
class Faults:
    hang_creates: tuple[str, ...] = ()
    hang_deletes: tuple[str, ...] = ()
    drop_watches: tuple[DropWatch, ...] = ()
    hang_lists: tuple[str, ...] = ()  # resource plurals
    fail_creates: tuple[FailCreate, ...] = ()
    forbid: frozenset[tuple[str, str]] = frozenset()  # (RBAC verb, resource plural) the user may not do
    fail_deletes: tuple[FailCreate, ...] = ()  # failDeletes: FailCreate entries matching DELETEs

    def forbids(self, verb: str, plural: str) -> bool:
        """True when the RBAC `verb` (list, create ...) on resource `plural` is to be refused (403)."""
        return (verb, plural) in self.forbid

    def hangs(self, op: str, plural: str, name: str) -> bool:
        """True when `op` ("create" or "delete") of object `name` of resource `plural` is to hang."""
        entries = self.hang_creates if op == "create" else self.hang_deletes if op == "delete" else ()
        for entry in entries:
            only, _, ending = entry.rpartition("/")
            if name and name.endswith(ending) and only in ("", plural):
                return True
        return False

    def failing(self, plural: str, name: str, op: str = "create",
                answered: Callable[[FailCreate], int] = lambda entry: 0) -> FailCreate | None:
        """The failCreates (op "delete": failDeletes) entry that answers a create of object `name` of resource
        `plural`: the first matching one that has not answered its `times` calls (`answered`: how many it has; the
        caller counts)."""
        for entry in self.fail_creates if op == "create" else self.fail_deletes:
            if matches(entry.match, plural, name) and not (entry.times and answered(entry) >= entry.times):
                return entry
        return None


def matches(match: str, plural: str, name: str) -> bool:
    """Whether a failCreates / failDeletes `match` (a name ending, or `<plural>/<ending>`) matches a call on object
    `name` of resource `plural`."""
    only, _, ending = match.rpartition("/")
    return name.endswith(ending) and only in ("", plural)


def covers(earlier: str, later: str) -> bool:
    """Whether every call `later` matches, `earlier` matches too: its own plural and ending, as a call, match."""
    only, _, ending = later.rpartition("/")
    return matches(earlier, only, ending)  # an ending of `later`'s ends in `earlier`'s; no plural named: none either


def parse(cluster: dict[str, Any], extra: Collection[str] = ()) -> Faults:
    """The cluster file's ``faults`` mapping (`extra`: other keys the caller knows and checks itself); ValueError
    naming the key when it is malformed."""
    faults = cluster.get("faults") or {}
    known = sorted([*KEYS.values(), *extra])
    if not isinstance(faults, dict):
        raise ValueError(f"faults: a mapping ({', '.join(known)}), got {faults!r}")
    unknown = set(faults) - set(known)
    if unknown:
        raise ValueError(f"faults: unknown keys {sorted(unknown)} (known: {known})")
    lists = {}
    for key in KEYS.values():
        entries = faults.get(key) or []
        if not isinstance(entries, list) or not all(isinstance(e, str) and e.rpartition("/")[2] for e in entries):
            raise ValueError(f"faults.{key}: a list of object name endings ('-0003', or "
                             f"'<resource>/-0003' for that resource's only), got {entries!r}")
        lists[key] = tuple(entries)
    hang_lists = faults.get(HANG_LISTS) or []
    if not isinstance(hang_lists, list) or not all(isinstance(e, str) and e for e in hang_lists):
        raise ValueError(f"faults.{HANG_LISTS}: a list of resource plurals ('persistentvolumes'), got {hang_lists!r}")
    forbid = faults.get(FORBID) or []
    pairs = [tuple(e.split()) for e in forbid] if isinstance(forbid, list) and all(isinstance(e, str) for e in forbid) \
        else None
    if pairs is None or not all(len(p) == 2 and p[0] in RBAC_VERBS for p in pairs):
        raise ValueError(f"faults.{FORBID}: a list of '<verb> <resource plural>' ('list persistentvolumes'; verbs: "
                         f"{', '.join(RBAC_VERBS)}), got {forbid!r}")
    return Faults(lists["hangCreates"], lists["hangDeletes"], _drops(faults.get(DROP) or []), tuple(hang_lists),
                  _fails(faults.get(FAIL) or []), frozenset((v, r) for v, r in pairs),
                  _fails(faults.get(FAIL_DELETES) or [], FAIL_DELETES))


def _fails(entries: Any, key: str = FAIL) -> tuple[FailCreate, ...]:
    out = []
    for e in entries if isinstance(entries, list) else [entries]:
        times = e.get("times", 0) if isinstance(e, dict) else None
        after = e.get("retryAfter", 1 if e.get("status") == 429 else 0) if isinstance(e, dict) else None
        ok = isinstance(e, dict) and set(e) <= {"match", "status", "times", "retryAfter", "stored"} \
            and isinstance(e.get("match"), str) and type(e.get("status")) is int and 400 <= e["status"] <= 599 \
            and type(times) is int and times >= 0 and type(after) is int and after >= 0 \
            and type(e.get("stored", False)) is bool
        if not ok:
            raise ValueError(f"faults.{key}: a list of {{match: <name ending or plural/ending>, status: <400-599>, "
                             f"times: <n, 0 = always>, retryAfter: <s>, stored: <bool>}}, got {entries!r}")
        out.append(FailCreate(e["match"], e["status"], times, after, e.get("stored", False)))
    for i, entry in enumerate(out):
        if (j := next((j for j, e in enumerate(out[:i]) if not e.times and covers(e.match, entry.match)),
                      None)) is not None:
            raise ValueError(f"faults.{key}[{i}] ({entry.match!r}, status {entry.status}) is never answered: entry "
                             f"{j} ({out[j].match!r}, times: 0) comes first and answers every call it matches; give "
                             f"entry {j} a times to plant a sequence, or remove entry {i}")
    return tuple(out)


def _drops(entries: Any) -> tuple[DropWatch, ...]:
    out = []
    for e in entries if isinstance(entries, list) else [entries]:
        ok = isinstance(e, dict) and set(e) <= {"resource", "afterEvents", "downSeconds", "silent"} \
            and type(e.get("silent", False)) is bool \
            and isinstance(e.get("resource"), str) and e["resource"] \
            and isinstance(e.get("afterEvents", 0), int) and not isinstance(e.get("afterEvents", 0), bool) \
            and e.get("afterEvents", 0) >= 0 and isinstance(e.get("downSeconds", 0), int | float) \
            and not isinstance(e.get("downSeconds", 0), bool) and e.get("downSeconds", 0) >= 0
        if not ok:
            raise ValueError(f"faults.{DROP}: a list of {{resource: <plural>, afterEvents: <n>, downSeconds: <s>, "
                             f"silent: <bool>}}, got {entries!r}")
        out.append(DropWatch(e["resource"], e.get("afterEvents", 0), float(e.get("downSeconds", 0)),
                             e.get("silent", False)))
    return tuple(out)
