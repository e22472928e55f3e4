"""Fault knobs of the cluster file (``faults:``), nomadsim's too: a create or delete that never answers.

    faults:
      hangCreates: ["persistentvolumeclaims/-0003"]   # POST of a claim whose name ends so: no answer
      hangDeletes: ["-0005"]                           # DELETE of any object whose name ends so: no answer

An entry is a name ending, or ``<resource plural>/<name ending>`` to hang only that resource's calls. The
request is read and then held, unanswered and without effect (the object is not created, or not deleted),
until the client gives up (its read timeout) or the emulator stops (503); other requests go on. A real API
server behind an overloaded etcd or a stuck admission webhook times such calls out after 60 s or more.
nomadsim reads the same knobs (its volume IDs are the names, its resource ``volumes``) beside its own
``refuseCreatesAfter`` (``parse``'s `extra`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

KEYS = {"create": "hangCreates", "delete": "hangDeletes"}


@dataclass(frozen=True)
class Faults:
    hang_creates: tuple[str, ...] = ()
    hang_deletes: tuple[str, ...] = ()

    def hangs(self, op: str, plural: str, name: str) -> bool:
        """True when `op` ("create" or "delete") of object `name` of resource `plural` is to hang."""
        entries = self.hang_creates if op == "create" else self.hang_deletes if op == "delete" else ()
        for entry in entries:
            only, _, ending = entry.rpartition("/")
            if name and name.endswith(ending) and only in ("", plural):
                return True
        return False


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
    return Faults(lists["hangCreates"], lists["hangDeletes"])
