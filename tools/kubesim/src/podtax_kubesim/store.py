"""The object store: one global resourceVersion counter, a bounded event history for watch
resumption (older versions get 410 Gone), fan-out to watchers and to in-process controllers.

Everything here runs on the emulator's event-loop thread: no locks. Stored objects are never
mutated in place; writers pass a new dict (copy first).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from podtax_kubesim.selectors import Matcher
from podtax_kubesim.util import ApiError, Obj, conflict, dumps, new_uid, not_found, now

Key = tuple[str, str]  # (namespace, name)


def list_key(k: Key, namespace: str | None) -> str:
    """`k`'s etcd key after a list's prefix, /registry/<resource>/ for a list of all namespaces (then
    <namespace>/<name>), /registry/<resource>/<namespace>/ within one namespace or for a cluster-scoped resource
    (then <name>): a real API server lists in the order of these keys (etcd's range, the watch cache's B-tree)."""
    return k[1] if namespace is not None or not k[0] else f"{k[0]}/{k[1]}"


@dataclass(slots=True)
class Event:
    rv: int
    key: str
    type: str  # ADDED | MODIFIED | DELETED
    obj: Obj
    old: Obj | None
    raw: bytes
    lines: dict[str, bytes] = field(default_factory=dict)

    def line(self, kind: str) -> bytes:
        cached = self.lines.get(kind)
        if cached is None:
            cached = self.lines[kind] = b'{"type":"' + kind.encode() + b'","object":' + self.raw + b"}\n"
        return cached


class Watcher:
    """One watch stream: a buffer of encoded lines that the HTTP writer drains."""

    def __init__(self, store: Store, key: str, namespace: str | None, match: Matcher | None,
                 view: Callable[[Obj], Obj] | None = None, max_buffer: int = 200_000) -> None:
        self.store, self.key, self.namespace, self.match, self.view = store, key, namespace, match, view
        self.buf: list[bytes] = []
        self.wake = asyncio.Event()
        self.closed = False
        self.max_buffer = max_buffer
        self.last_rv = 0

    def selects(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return False
        return self.match is None or self.match(obj)

    def offer(self, ev: Event) -> None:
        now_in, was_in = self.selects(ev.obj), self.selects(ev.old) if ev.type == "MODIFIED" else False
        if ev.type == "MODIFIED":
            kind = "MODIFIED" if now_in and was_in else "ADDED" if now_in else "DELETED" if was_in else ""
        else:
            kind = ev.type if now_in else ""
        if not kind:
            return
        self.push(ev.line(kind) if self.view is None else self.encode(kind, ev.obj))
        self.last_rv = ev.rv

    def encode(self, kind: str, obj: Obj) -> bytes:
        obj = self.view(obj) if self.view else obj
        return b'{"type":"' + kind.encode() + b'","object":' + dumps(obj) + b"}\n"

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        self.buf.append(line)
        if len(self.buf) > self.max_buffer:  # a client that does not read: drop it, as the apiserver does
            self.close()
        self.wake.set()

    def bookmark(self, kind: str, api_version: str, annotations: dict[str, str] | None = None) -> None:
        meta: Obj = {"resourceVersion": str(self.store.rv)}
        if annotations:
            meta["annotations"] = annotations
        self.push(dumps({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version,
                                                         "metadata": meta}}) + b"\n")

    def drain(self) -> bytes:
        data = b"".join(self.buf)
        self.buf.clear()
        self.wake.clear()
        return data

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.store.watchers.get(self.key, set()).discard(self)
            self.wake.set()


class Store:
    def __init__(self, history: int = 100_000) -> None:
        self.rv = 1
        self.objects: dict[str, dict[Key, Obj]] = {}
        self.raw: dict[str, dict[Key, bytes]] = {}
        self.history: deque[Event] = deque()
        self.history_limit = history
        self.compacted_rv = 1  # watches from versions below this get 410 Gone
        self.watchers: dict[str, set[Watcher]] = {}
        self.listeners: dict[str, list[Callable[[Event], None]]] = {}
        self._pending: deque[Event] = deque()
        self._dispatching = False
        self._order: dict[str, list[tuple[str, Key]]] = {}  # each resource's keys in list order, as last listed
        self._added: dict[str, list[tuple[str, Key]]] = {}  # keys created since, merged in at the next list

    # --- reads -------------------------------------------------------------
    def get(self, key: str, namespace: str, name: str) -> Obj | None:
        return self.objects.get(key, {}).get((namespace, name))

    def must_get(self, key: str, namespace: str, name: str) -> Obj:
        obj = self.get(key, namespace, name)
        if obj is None:
            group, _, plural = key.partition("/")
            raise not_found(plural, name, group)
        return obj

    def get_raw(self, key: str, namespace: str, name: str) -> bytes | None:
        return self.raw.get(key, {}).get((namespace, name))

    def items(self, key: str, namespace: str | None = None, match: Matcher | None = None) -> Iterator[Obj]:
        for (ns, _), obj in self.objects.get(key, {}).items():
            if (namespace is None or ns == namespace) and (match is None or match(obj)):
                yield obj

    def listed(self, key: str, namespace: str | None = None) -> list[tuple[Key, Obj]]:
        """The objects of `key` (of `namespace`, or all when None) in the order a real API server lists them (by
        etcd key, list_key), not in the order they were created."""
        objs = self.objects.get(key, {})
        return [(k, objs[k]) for _, k in self._ordered(key, objs) if namespace is None or k[0] == namespace]

    def _ordered(self, key: str, objs: dict[Key, Obj]) -> list[tuple[str, Key]]:
        """The keys of `objs` in list order (by list_key across namespaces; within one namespace that is by name): the
        last order kept, the keys created since merged in and the deleted left out, so a list sorts little."""
        order, added = self._order.get(key), self._added.pop(key, [])
        if order is None:
            order = sorted((list_key(k, None), k) for k in objs)
        elif added or len(order) != len(objs):
            merged: list[tuple[str, Key]] = []
            for entry in sorted([e for e in order if e[1] in objs] + [e for e in added if e[1] in objs]):
                if not merged or merged[-1] != entry:  # deleted and created again since: in both
                    merged.append(entry)
            order = merged
        self._order[key] = order
        return order

    def raw_items(self, key: str, namespace: str | None, match: Matcher | None) -> list[bytes]:
        """The stored JSON of the objects a list of `key` returns, in a real API server's order (listed)."""
        objs, raws = self.objects.get(key, {}), self.raw.get(key, {})
        order = self._ordered(key, objs)
        if namespace is None and match is None:
            return [raws[k] for _, k in order]
        return [raws[k] for _, k in order
                if (namespace is None or k[0] == namespace) and (match is None or match(objs[k]))]

    def objects_at(self, key: str, rv: int) -> dict[Key, Obj] | None:
        """The objects of `key` as they were at resourceVersion `rv` (after its write): the current ones with the
        writes since undone from the history; None when the history no longer reaches back to `rv` (compacted)."""
        current = self.objects.get(key, {})
        if rv >= self.rv:
            return current
        if rv < self.compacted_rv:
            return None
        before: dict[Key, Obj | None] = {}
        for ev in self._since(rv):  # the first write after rv of an object holds its state at rv (None: not yet)
            if ev.key == key:
                meta = ev.obj["metadata"]
                before.setdefault((meta.get("namespace", ""), meta["name"]), ev.old)
        if not before:
            return current
        out = {k: obj for k, obj in current.items() if k not in before}
        out.update({k: obj for k, obj in before.items() if obj is not None})
        return out

    # --- writes ------------------------------------------------------------
    def create(self, key: str, obj: Obj) -> Obj:
        meta = obj["metadata"]
        k = (meta.get("namespace", ""), meta["name"])
        bucket = self.objects.setdefault(key, {})
        if k in bucket:
            plural, group = key.partition("/")[2], key.partition("/")[0]
            qualified = f"{plural}.{group}" if group else plural
            raise ApiError(409, "AlreadyExists", f'{qualified} "{meta["name"]}" already exists',
                           {"name": meta["name"], "group": group, "kind": plural})
        meta.setdefault("uid", new_uid())
        meta.setdefault("creationTimestamp", now())
        return self._commit(key, k, obj, None, "ADDED")

    def update(self, key: str, obj: Obj, expect_rv: str | None = None) -> Obj:
        meta = obj["metadata"]
        k = (meta.get("namespace", ""), meta["name"])
        old = self.objects.get(key, {}).get(k)
        plural, group = key.partition("/")[2], key.partition("/")[0]
        if old is None:
            raise not_found(plural, meta["name"], group)
        if expect_rv and expect_rv != old["metadata"]["resourceVersion"]:
            raise conflict(plural, meta["name"], "the object has been modified; please apply your changes "
                           "to the latest version and try again", group)
        meta["uid"] = old["metadata"]["uid"]
        meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
        return self._commit(key, k, obj, old, "MODIFIED")

    def delete(self, key: str, namespace: str, name: str) -> Obj:
        k = (namespace, name)
        old = self.objects.get(key, {}).get(k)
        if old is None:
            raise not_found(key.partition("/")[2], name, key.partition("/")[0])
        del self.objects[key][k]
        del self.raw[key][k]
        final = dict(old)
        final["metadata"] = dict(old["metadata"])
        return self._commit(key, k, final, old, "DELETED", store=False)

    def _commit(self, key: str, k: Key, obj: Obj, old: Obj | None, kind: str, store: bool = True) -> Obj:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        raw = dumps(obj)
        if store:
            self.objects.setdefault(key, {})[k] = obj
            self.raw.setdefault(key, {})[k] = raw
        if kind == "ADDED" and key in self._order:  # for the next list's order (_ordered)
            added = self._added.setdefault(key, [])
            added.append((list_key(k, None), k))
            if len(added) > 1024 + len(self.objects[key]):  # created and deleted, never listed: sort anew instead
                del self._order[key], self._added[key]
        ev = Event(self.rv, key, kind, obj, old, raw)
        if len(self.history) >= self.history_limit:
            self.compacted_rv = self.history.popleft().rv
        self.history.append(ev)
        for watcher in list(self.watchers.get(key, ())):
            watcher.offer(ev)
        self._pending.append(ev)
        if not self._dispatching:
            self._dispatch()
        return obj

    def _dispatch(self) -> None:
        self._dispatching = True
        try:
            while self._pending:
                ev = self._pending.popleft()
                for fn in self.listeners.get(ev.key, ()):
                    fn(ev)
        finally:
            self._dispatching = False

    def compact(self) -> None:
        """Forget all history: every watch from an older resourceVersion now gets 410 Gone."""
        self.history.clear()
        self.compacted_rv = self.rv

    # --- watch and listeners -----------------------------------------------
    def listen(self, key: str, fn: Callable[[Event], None]) -> None:
        self.listeners.setdefault(key, []).append(fn)

    def watch(self, key: str, namespace: str | None, match: Matcher | None, since: int | None,
              view: Callable[[Obj], Obj] | None = None) -> Watcher:
        """Register a watcher; replay history after `since`, or ADDED for everything when None."""
        watcher = Watcher(self, key, namespace, match, view)
        if since is None:  # the state first, in a list's order (as the watch cache's B-tree or etcd's range gives it)
            raws = self.raw.get(key, {})
            for k, obj in self.listed(key, namespace):
                if watcher.selects(obj):
                    watcher.push(watcher.encode("ADDED", obj) if view else
                                 b'{"type":"ADDED","object":' + raws[k] + b"}\n")
        elif since < self.compacted_rv:
            raise ApiError(410, "Expired", f"too old resource version: {since} ({self.compacted_rv})")
        else:
            for ev in self._since(since):
                if ev.key == key:
                    watcher.offer(ev)
        self.watchers.setdefault(key, set()).add(watcher)
        return watcher

    def _since(self, since: int) -> list[Event]:
        out: list[Event] = []
        for ev in reversed(self.history):
            if ev.rv <= since:
                break
            out.append(ev)
        out.reverse()
        return out
