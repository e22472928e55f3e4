"""Cluster files of the simulated Nomad: region, namespaces, ACL token, CSI plugins with their
controller latencies, and fault knobs. A plain mapping (YAML file or dict):

    region: global
    datacenter: dc1
    namespaces: [default, batch]          # "default" always exists
    acl: {token: s3cret}                  # ACLs on: this is the only (management) token
    # acl: {token: s3cret, readToken: r3ad}   # also a token whose policy reads only (no csi-write-volume)
    seed: 1
    plugins:
      - id: hostpath
        provider: hostpath.csi.podtax.io
        version: 1.0.0
        controllers: {healthy: 1, expected: 1}
        nodes: {healthy: 3, expected: 3}
        supportsCreateDelete: true        # or one per controller, [true, false]: Nomad asks one of them, in no
                                          # fixed order (the first of a Go map), a random one here
        createLatency: {distribution: lognormal, median: 0.08, sigma: 0.3}   # podtax_kubesim.dist syntax
        deleteLatency: 0.05
    faults:
      refuseCreatesAfter: 50              # the 51st and later creates fail with a plugin error
      hangCreates: ["-0003"]              # the create of a volume whose ID ends so never returns
      hangDeletes: ["-0005"]              # nor its delete (the other volumes' deletes go on)
      failRequests: [{request: "GET /v1/volumes", status: 500, times: 3}]   # answered with Nomad's words

The hang knobs are read by podtax_kubesim.faults, as kubesim's (an unknown key under faults is refused, kubesim's
dropWatches too: nomadsim has no watches); an entry naming a resource names ``volumes`` (``volumes/-0003``), the only
one here. `validate` leaves them parsed in ``hangs`` (a podtax_kubesim.faults.Faults).

A ``failRequests`` entry (nomadsim's own) answers the first ``times`` requests of ``request`` ('<METHOD> <route>',
the route as in the metrics' path_template: ``/v1/volumes``, ``/v1/volume/csi/:id/delete`` ...; ``times: 0``: every
one) with ``status`` and the plain-text body real Nomad sends for it (FAIL_TEXT: a 500 ``No cluster leader`` while its
servers elect none, a 429 from its per-client connection limit), doing nothing else.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from podtax_kubesim import faults
from podtax_kubesim.cluster import read_yaml
from podtax_kubesim.cluster_checks import unknown_keys

Obj = dict[str, Any]
REFUSE = "refuseCreatesAfter"  # a fault of nomadsim's own; the hang knobs are kubesim's (podtax_kubesim.faults)
FAIL = "failRequests"  # nomadsim's own too
# the plain-text body Nomad answers with, by status (nomad/structs/errors.go ErrNoLeader; command/agent/http.go's
# connLimiter, which also closes the connection; errCodeFromHandler's Permission denied)
FAIL_TEXT = {500: "No cluster leader", 429: "Your IP is issuing too many concurrent connections, please rate limit "
             "your calls\n", 403: "Permission denied"}

DEFAULT_CLUSTER: Obj = {
    "region": "global",
    "datacenter": "dc1",
    "namespaces": ["default"],
    "plugins": [{"id": "hostpath", "provider": "hostpath.csi.podtax.io", "version": "1.0.0",
                 "controllers": {"healthy": 1, "expected": 1}, "nodes": {"healthy": 1, "expected": 1},
                 "createLatency": 0.0, "deleteLatency": 0.0}],
}
DISTRIBUTION_KEYS = ("createLatency", "deleteLatency")
KEYS = ("region", "datacenter", "namespaces", "acl", "seed", "plugins", "faults")  # a cluster file's top level


def load(cluster: Obj | Path | str | None) -> Obj:
    """The validated cluster mapping (with defaults filled in); ValueError names the bad field."""
    if cluster is None:
        data: Any = copy.deepcopy(DEFAULT_CLUSTER)
    elif isinstance(cluster, dict):
        data = copy.deepcopy(cluster)
    else:
        data = read_yaml(cluster)  # a YAML error was a traceback; a key given twice is refused there
    if not isinstance(data, dict):
        raise ValueError(f"{cluster}: a nomadsim cluster file must be a mapping with a 'plugins' list")
    if isinstance(cluster, Path | str) and (why := unknown_keys(data, KEYS, str(cluster))):  # `plugin:` served the
        raise ValueError(why)                                                               # default plugin
    return validate(data)


def _count(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{field}: must be a whole number >= 0, got {value!r}")
    return value


def _health(value: Any, field: str) -> Obj:
    if value is None:
        return {"healthy": 1, "expected": 1}
    if isinstance(value, int) and not isinstance(value, bool):
        return {"healthy": _count(value, field), "expected": value}
    if not isinstance(value, dict):
        raise ValueError(f"{field}: a count or a mapping {{healthy: N, expected: M}}, got {value!r}")
    healthy = _count(value.get("healthy", 1), f"{field}.healthy")
    return {"healthy": healthy, "expected": _count(value.get("expected", healthy), f"{field}.expected")}


def _supports(value: Any, controllers: Obj, field: str) -> bool | list[bool]:
    """A plugin's CREATE_DELETE_VOLUME: one bool for all its controllers, or a list of one per controller."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, list) or not all(isinstance(v, bool) for v in value) \
            or len(value) != controllers["expected"] or not value:
        raise ValueError(f"{field}: true, false, or a list of one per controller ({controllers['expected']}), "
                         f"got {value!r}")
    return value


def supports_create(config: Obj, i: int) -> bool:
    """Whether controller `i` of a plugin (its validated `config`) supports CREATE_DELETE_VOLUME."""
    value = config["supportsCreateDelete"]
    return value[i % len(value)] if isinstance(value, list) else bool(value)


def validate(data: Obj) -> Obj:
    data.setdefault("region", "global")
    data.setdefault("datacenter", "dc1")
    namespaces = data.get("namespaces") or []
    if not isinstance(namespaces, list) or not all(isinstance(n, str) and n for n in namespaces):
        raise ValueError(f"namespaces: a list of names, got {namespaces!r}")
    data["namespaces"] = ["default"] + [n for n in namespaces if n != "default"]
    plugins = data.get("plugins")
    if plugins is None:
        plugins = copy.deepcopy(DEFAULT_CLUSTER["plugins"])
    if not isinstance(plugins, list):
        raise ValueError(f"plugins: a list of plugin mappings, got {plugins!r}")
    seen: set[str] = set()
    for i, plugin in enumerate(plugins):
        where = f"plugins[{i}]"
        if not isinstance(plugin, dict) or not isinstance(plugin.get("id"), str) or not plugin["id"].strip():
            raise ValueError(f"{where}.id: every plugin needs an id (a non-empty string)")
        if plugin["id"] in seen:
            raise ValueError(f"{where}.id: duplicate plugin id {plugin['id']!r}")
        seen.add(plugin["id"])
        plugin.setdefault("provider", f"{plugin['id']}.csi.podtax.io")
        plugin.setdefault("version", "1.0.0")
        plugin["controllers"] = _health(plugin.get("controllers"), f"{where}.controllers")
        plugin["nodes"] = _health(plugin.get("nodes"), f"{where}.nodes")
        plugin.setdefault("controllerRequired", plugin["controllers"]["expected"] > 0)
        plugin["supportsCreateDelete"] = _supports(plugin.get("supportsCreateDelete", True), plugin["controllers"],
                                                   f"{where}.supportsCreateDelete")
    data["plugins"] = plugins
    acl = data.get("acl") or {}
    if not isinstance(acl, dict) or set(acl) - {"token", "readToken"} \
            or not all(acl.get(k) is None or isinstance(acl[k], str) for k in ("token", "readToken")):
        raise ValueError(f"acl: a mapping {{token: <secret>, readToken: <secret, reads only>}}, got {acl!r}")
    data["acl"] = acl
    hangs = data["hangs"] = faults.parse(data, extra=(REFUSE, FAIL))  # hangCreates / hangDeletes, as kubesim's
    for key, entries in (("hangCreates", hangs.hang_creates), ("hangDeletes", hangs.hang_deletes)):
        if other := [e for e in entries if e.rpartition("/")[0] not in ("", "volumes")]:
            raise ValueError(f"faults.{key}: nomadsim's only resource is volumes ('-0003' or 'volumes/-0003'), "
                             f"got {other!r}: it would never match")
    knobs = data["faults"] = data.get("faults") or {}
    if knobs.get(REFUSE) is not None:
        _count(knobs[REFUSE], f"faults.{REFUSE}")
    data["fails"] = _fails(knobs.get(FAIL) or [])
    return data


def _fails(entries: Any) -> list[Obj]:
    """faults.failRequests, checked: [{request: 'METHOD /route', status: 400-599, times: n}]."""
    ok = isinstance(entries, list) and all(
        isinstance(e, dict) and set(e) <= {"request", "status", "times"} and isinstance(e.get("request"), str)
        and len(e["request"].split()) == 2 and e["request"].split()[1].startswith("/")
        and type(e.get("status")) is int and 400 <= e["status"] <= 599
        and type(e.get("times", 0)) is int and e.get("times", 0) >= 0 for e in entries)
    if not ok:
        raise ValueError(f"faults.{FAIL}: a list of {{request: '<METHOD> <route>' ('GET /v1/volumes'), status: "
                         f"<400-599>, times: <n, 0 = always>}}, got {entries!r}")
    return [{"request": e["request"], "status": e["status"], "times": e.get("times", 0)} for e in entries]
