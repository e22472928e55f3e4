"""The simulated Nomad server state: CSI plugins and volumes per namespace, the Raft index, blocking
queries, and the controller RPCs with their injected latencies. Error strings are Nomad's own
(nomad/csi_endpoint.go, nomad/state/state_store.go, nomad/structs/csi.go); they reach the client
as plain-text 500 bodies, like Nomad's HTTP layer does for errors that carry no code."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from podtax_kubesim import faults
from podtax_kubesim.dist import Sampler, sampler

from podtax_nomadsim.cluster import REFUSE, Obj, supports_create

FIRST_INDEX = 10
CAPABILITY_KEYS = ("AccessMode", "AttachmentMode")


class NomadError(Exception):
    """An error answered as a plain-text body with this HTTP status (500 unless Nomad codes it)."""

    def __init__(self, message: str, code: int = 500) -> None:
        super().__init__(message)
        self.message, self.code = message, code


def multierror(errors: list[str]) -> str:
    """hashicorp/go-multierror's ListFormatFunc."""
    if len(errors) == 1:
        return f"1 error occurred:\n\t* {errors[0]}\n\n"
    points = "\n\t".join(f"* {e}" for e in errors)
    return f"{len(errors)} errors occurred:\n\t{points}\n\n"


@dataclass
class Plugin:
    config: Obj
    create_latency: Sampler
    delete_latency: Sampler
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # serializedControllerRPC
    create_index: int = FIRST_INDEX

    @property
    def id(self) -> str:
        return self.config["id"]

    def health(self) -> Obj:
        c, n = self.config["controllers"], self.config["nodes"]
        return {"ControllerRequired": bool(self.config["controllerRequired"]),
                "ControllersHealthy": c["healthy"], "ControllersExpected": c["expected"],
                "NodesHealthy": n["healthy"], "NodesExpected": n["expected"]}


@dataclass
class ControllerCall:
    """One simulated controller RPC, on the server's monotonic clock (for tests and figures)."""
    plugin: str
    op: str  # "create" | "delete"
    volume: str
    start: float
    end: float
    latency: float


class State:
    def __init__(self, cluster: Obj, seed: int | None = None, refuse_creates_after: int | None = None) -> None:
        self.cluster = cluster
        self.rng = random.Random(seed if seed is not None else cluster.get("seed"))
        self.namespaces: list[str] = list(cluster["namespaces"])
        self.plugins: dict[str, Plugin] = {}
        for p in cluster["plugins"]:
            self.plugins[p["id"]] = Plugin(p, sampler(p.get("createLatency"), self.rng, 0.0),
                                           sampler(p.get("deleteLatency"), self.rng, 0.0))
        self.faults: faults.Faults = cluster["hangs"]  # parsed by cluster.validate
        self.refuse_creates_after = (refuse_creates_after if refuse_creates_after is not None
                                     else (cluster.get("faults") or {}).get(REFUSE))
        self.index = FIRST_INDEX
        self.tables = {"csi_volumes": FIRST_INDEX, "csi_plugins": FIRST_INDEX}
        self.volumes: dict[tuple[str, str], Obj] = {}
        self.claims: dict[tuple[str, str], dict[str, Obj]] = {}  # alloc id -> {mode, node, terminal}
        self.created_total = 0
        self.orphaned: list[str] = []  # ExternalIDs the plugin made that Nomad did not register (a refused write)
        self.calls: collections.deque[ControllerCall] = collections.deque(maxlen=100_000)
        self.changed = asyncio.Event()

    # --- index and blocking queries -------------------------------------------------
    def _bump(self, table: str) -> int:
        self.index += 1
        self.tables[table] = self.index
        self.changed.set()
        self.changed = asyncio.Event()
        return self.index

    async def blocking(self, query: Callable[[], tuple[Any, int]], min_index: int, wait: float) -> tuple[Any, int]:
        """Run query() -> (result, index); with min_index > 0, re-run it on every change until the index
        moves past min_index or `wait` seconds pass (Nomad's blockingRPC, without its jitter)."""
        deadline = time.monotonic() + wait
        while True:
            result, index = query()
            index = max(index, 1)
            remaining = deadline - time.monotonic()
            if min_index <= 0 or index > min_index or remaining <= 0:
                return result, index
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)

    # --- reads ------------------------------------------------------------------------
    def _denormalize(self, vol: Obj) -> Obj:
        out = dict(vol)
        plugin = self.plugins.get(vol["PluginID"])
        if plugin is not None:
            out.update(plugin.health())
            out["Schedulable"] = plugin.config["nodes"]["healthy"] > 0
        claims = self.claims.get((vol["Namespace"], vol["ID"]), {})
        out["ReadAllocs"] = {a: None for a, c in claims.items() if c["mode"] == "read"}
        out["WriteAllocs"] = {a: None for a, c in claims.items() if c["mode"] == "write"}
        return out

    def volume(self, namespace: str, vol_id: str) -> tuple[Obj | None, int]:
        vol = self.volumes.get((namespace, vol_id))
        if vol is None:
            return None, self.tables["csi_volumes"]
        out = self._denormalize(vol)
        out["Secrets"] = out["MountOptions"] = None
        return out, vol["ModifyIndex"]

    def volume_stubs(self, namespace: str, prefix: str = "", plugin_id: str = "",
                     node_id: str = "") -> tuple[list[Obj], int]:
        out = []
        for (ns, vol_id), vol in sorted(self.volumes.items()):
            if (namespace != "*" and ns != namespace) or not vol_id.startswith(prefix):
                continue
            if plugin_id and vol["PluginID"] != plugin_id:
                continue
            claims = self.claims.get((ns, vol_id), {})
            if node_id and not any(c["node"] == node_id for c in claims.values()):
                continue
            full = self._denormalize(vol)
            stub = {k: full.get(k) for k in (
                "ID", "Namespace", "Name", "ExternalID", "Topologies", "AccessMode", "AttachmentMode",
                "Schedulable", "PluginID", "Provider", "ControllerRequired", "ControllersHealthy",
                "ControllersExpected", "NodesHealthy", "NodesExpected", "ResourceExhausted",
                "CreateIndex", "ModifyIndex")}
            stub["CurrentReaders"] = len(full["ReadAllocs"])
            stub["CurrentWriters"] = len(full["WriteAllocs"])
            out.append(stub)
        return out, self.tables["csi_volumes"]

    def plugin_stubs(self) -> tuple[list[Obj], int]:
        stubs = [{"ID": p.id, "Provider": p.config["provider"], **p.health(),
                  "CreateIndex": p.create_index, "ModifyIndex": p.create_index}
                 for p in sorted(self.plugins.values(), key=lambda p: p.id)]
        return stubs, self.tables["csi_plugins"]

    def plugin(self, plugin_id: str) -> tuple[Obj | None, int]:
        p = self.plugins.get(plugin_id)
        if p is None:
            return None, self.tables["csi_plugins"]
        cfg = p.config

        def infos(kind: str, total: int, healthy: int) -> Obj:
            return {f"sim-{kind}-{i}": {
                "PluginID": p.id, "AllocID": f"sim-alloc-{p.id}-{kind}-{i}", "Healthy": i < healthy,
                "HealthDescription": "healthy" if i < healthy else "simulated: unhealthy",
                "RequiresControllerPlugin": bool(cfg["controllerRequired"]), "RequiresTopologies": False,
                **({"ControllerInfo": {"SupportsCreateDelete": supports_create(cfg, i),
                                       "SupportsAttachDetach": True, "SupportsListVolumes": True}}
                   if kind == "controller" else {"NodeInfo": {"ID": f"sim-{kind}-{i}", "MaxVolumes": 0}})}
                for i in range(total)}

        vols = sum(1 for v in self.volumes.values() if v["PluginID"] == p.id)
        out = {"ID": p.id, "Provider": cfg["provider"], "Version": cfg["version"], **p.health(),
               "Controllers": infos("controller", cfg["controllers"]["expected"], cfg["controllers"]["healthy"]),
               "Nodes": infos("node", cfg["nodes"]["expected"], cfg["nodes"]["healthy"]),
               "Allocations": [], "VolumeCount": vols,
               "CreateIndex": p.create_index, "ModifyIndex": p.create_index}
        return out, self.tables["csi_plugins"]

    # --- writes -------------------------------------------------------------------------
    def _validate(self, vol: Obj) -> Plugin:
        errs = []
        if not vol.get("ID"):
            errs.append("missing volume id")
        if not vol.get("PluginID"):
            errs.append("missing plugin id")
        if not vol.get("Namespace"):
            errs.append("missing namespace")
        if vol.get("SnapshotID") and vol.get("CloneID"):
            errs.append("only one of snapshot_id and clone_id is allowed")
        if not vol.get("RequestedCapabilities"):
            errs.append("must include at least one capability block")
        if errs:
            raise NomadError("validation: " + ", ".join(errs))
        plugin = self.plugins.get(vol["PluginID"])
        if plugin is None:
            raise NomadError(f"no CSI plugin named: {vol['PluginID']} could be found")
        if plugin.config["controllerRequired"] and plugin.config["controllers"]["healthy"] == 0:
            raise NomadError(f"no healthy controllers for CSI plugin: {plugin.id}")
        return plugin

    def _check_namespace(self, vol: Obj) -> None:
        if vol["Namespace"] not in self.namespaces:
            raise NomadError(f"volume {vol['ID']} is in nonexistent namespace {vol['Namespace']}")

    def _new_volume(self, vol: Obj, plugin: Plugin) -> Obj:
        out: Obj = {"ID": vol["ID"], "Name": vol.get("Name") or vol["ID"], "ExternalID": vol.get("ExternalID", ""),
                    "Namespace": vol["Namespace"], "Topologies": None, "AccessMode": "", "AttachmentMode": "",
                    "MountOptions": vol.get("MountOptions"), "Secrets": vol.get("Secrets"),
                    "Parameters": vol.get("Parameters"), "Context": vol.get("Context"),
                    "Capacity": int(vol.get("Capacity") or 0),
                    "RequestedCapacityMin": int(vol.get("RequestedCapacityMin") or 0),
                    "RequestedCapacityMax": int(vol.get("RequestedCapacityMax") or 0),
                    "RequestedCapabilities": vol.get("RequestedCapabilities"),
                    "CloneID": vol.get("CloneID", ""), "SnapshotID": vol.get("SnapshotID", ""),
                    "RequestedTopologies": vol.get("RequestedTopologies"),
                    "ReadClaims": {}, "WriteClaims": {}, "PastClaims": {},
                    "PluginID": plugin.id, "Provider": plugin.config["provider"],
                    "ProviderVersion": plugin.config["version"], "ResourceExhausted": None}
        out.update(plugin.health())
        out["Schedulable"] = plugin.config["nodes"]["healthy"] > 0
        return out

    def _upsert(self, vols: list[Obj]) -> int:
        index = self._bump("csi_volumes")
        now_ns = time.time_ns()
        for vol in vols:
            key = (vol["Namespace"], vol["ID"])
            old = self.volumes.get(key)
            vol["CreateIndex"] = old["CreateIndex"] if old else index
            vol["CreateTime"] = old["CreateTime"] if old else now_ns
            vol["ModifyIndex"], vol["ModifyTime"] = index, now_ns
            self.volumes[key] = vol
        return index

    async def hang(self, op: str, vol_id: str) -> None:
        """Fault hangCreates/hangDeletes: a volume whose ID ends in one of them never gets its answer (the
        request hangs until the client gives up)."""
        if self.faults.hangs(op, "volumes", vol_id):
            await asyncio.Event().wait()

    async def _controller(self, plugin: Plugin, op: str, vol_id: str) -> None:
        latency = max((plugin.create_latency if op == "create" else plugin.delete_latency)(), 0.0)
        start = time.monotonic()
        if latency > 0:
            await asyncio.sleep(latency)
        self.calls.append(ControllerCall(plugin.id, op, vol_id, start, time.monotonic(), latency))

    async def create(self, namespace: str, vols: list[Obj]) -> tuple[list[Obj], int]:
        """CSIVolume.Create: validate all, then one controller CreateVolume per new volume (not
        serialized), register what succeeded, report failures as one multierror."""
        if not vols:
            raise NomadError("missing volume definition")
        checked = []
        for vol in vols:
            vol = dict(vol)
            vol["Namespace"] = vol.get("Namespace") or namespace
            plugin = self._validate(vol)
            if not plugin.config["controllerRequired"]:
                raise NomadError("plugin has no controller")
            # HasControllerCapability: the first controller of a Go map, in no fixed order (a random one here)
            if not supports_create(plugin.config, self.rng.randrange(max(1, plugin.config["controllers"]["expected"]))):
                raise NomadError("plugin does not support creating volumes")
            checked.append((vol, plugin, self.volumes.get((vol["Namespace"], vol["ID"]))))
        errors, done = [], []
        for vol, plugin, current in checked:
            if current is not None:
                problems = merge_problems(current, vol)
                if problems:
                    errors.append(multierror(problems))
                else:
                    merged = dict(current)
                    merged["RequestedCapabilities"] = vol["RequestedCapabilities"]
                    for key in ("Parameters", "Context", "MountOptions", "Secrets"):
                        if vol.get(key) is not None:
                            merged[key] = vol[key]
                    done.append(merged)
                continue
            await self.hang("create", vol["ID"])
            await self._controller(plugin, "create", vol["ID"])
            limit = self.refuse_creates_after
            if limit is not None and self.created_total >= limit:
                errors.append("controller create volume: CSI.ControllerCreateVolume: rpc error: code = "
                              f"ResourceExhausted desc = simulated storage full: plugin {plugin.id} refuses new "
                              f"volumes after {limit} (podtax nomadsim fault refuseCreatesAfter)")
                continue
            self.created_total += 1
            new = self._new_volume(vol, plugin)
            minimum, maximum = new["RequestedCapacityMin"], new["RequestedCapacityMax"]
            new["Capacity"] = minimum or maximum
            new["ExternalID"] = f"sim://{plugin.id}/{new['Namespace']}/{new['ID']}"
            new["Context"] = {**(new.get("Context") or {}), "simulated": "true"}
            done.append(new)
        # the answer holds the request's volumes, not the stored ones: Nomad's Create replies with the objects it sent
        # through Raft, whose indexes the state store sets on its own decoded copies (a new volume's CreateIndex and
        # ModifyIndex are 0 in the answer; the index is the answer's Index and X-Nomad-Index)
        reply = [{**v, **{k: v.get(k, 0) for k in ("CreateIndex", "ModifyIndex", "CreateTime", "ModifyTime")}}
                 for v in done]
        if missing := next((v for v in done if v["Namespace"] not in self.namespaces), None):
            # the namespace is checked only by the Raft write (the state store's UpsertCSIVolume), after the plugin
            # made the volumes, and it refuses the whole write: they stay in the storage, unknown to Nomad
            errors.append(f"volume {missing['ID']} is in nonexistent namespace {missing['Namespace']}")
            self.orphaned.extend(v["ExternalID"] for v in done if v["ExternalID"])
            done, reply = [], []
        index = self._upsert(done) if done else self.tables["csi_volumes"]
        if errors:
            raise NomadError(multierror(errors))
        return reply, index

    async def delete(self, namespace: str, vol_id: str) -> int:
        """CSIVolume.Delete: controller DeleteVolume (one RPC per plugin at a time), then deregister (which
        refuses a claimed volume)."""
        vol = self.volumes.get((namespace, vol_id))
        if vol is None:
            raise NomadError(f"volume not found: {vol_id}")
        plugin = self.plugins.get(vol["PluginID"])
        if plugin is None:
            raise NomadError(f"plugin not found: {vol['PluginID']}")
        await self.hang("delete", vol_id)  # before the plugin's lock: the other deletes go on
        async with plugin.lock:
            await self._controller(plugin, "delete", vol_id)
        # a claimed volume is refused only by the deregister after the plugin's DeleteVolume (Nomad 1.1 to 2.0 check
        # no claim before it): the storage is gone, the volume stays registered, `volume in use`
        return self.deregister(namespace, vol_id, force=False)

    def register(self, namespace: str, vols: list[Obj]) -> tuple[list[Obj], int]:
        """CSIVolume.Register: record existing external volumes (no controller call)."""
        if not vols:
            raise NomadError("missing volume definition")
        out = []
        for vol in vols:
            vol = dict(vol)
            vol["Namespace"] = vol.get("Namespace") or namespace
            plugin = self._validate(vol)
            self._check_namespace(vol)
            new = self._new_volume(vol, plugin)
            old = self.volumes.get((new["Namespace"], new["ID"]))
            if old is not None and (old["ExternalID"], old["PluginID"], old["Provider"]) != (
                    new["ExternalID"], new["PluginID"], new["Provider"]):
                raise NomadError(f"volume identity cannot be updated: {new['ID']}")
            out.append(new)
        return out, self._upsert(out)

    def deregister(self, namespace: str, vol_id: str, force: bool) -> int:
        key = (namespace, vol_id)
        if key not in self.volumes:
            raise NomadError(f"volume not found: {vol_id}")
        claims = self.claims.get(key, {})
        if claims and not (force and all(c["terminal"] for c in claims.values())):
            raise NomadError(f"volume in use: {vol_id}")
        del self.volumes[key]
        self.claims.pop(key, None)
        return self._bump("csi_volumes")

    def claim(self, namespace: str, vol_id: str, alloc_id: str, mode: str = "write", node: str = "sim-node-0",
              terminal: bool = False) -> int:
        """A simulated allocation claiming the volume (tests: 'volume in use')."""
        if (namespace, vol_id) not in self.volumes:
            raise NomadError(f"volume not found: {vol_id}")
        self.claims.setdefault((namespace, vol_id), {})[alloc_id] = {"mode": mode, "node": node,
                                                                   "terminal": terminal}
        self.volumes[(namespace, vol_id)]["ModifyIndex"] = index = self._bump("csi_volumes")
        return index

    def release(self, namespace: str, vol_id: str, alloc_id: str) -> int:
        self.claims.get((namespace, vol_id), {}).pop(alloc_id, None)
        if (namespace, vol_id) in self.volumes:
            self.volumes[(namespace, vol_id)]["ModifyIndex"] = self._bump("csi_volumes")
        return self.index


def merge_problems(current: Obj, update: Obj) -> list[str]:
    """CSIVolume.Merge's checks when a create names an existing volume (Nomad >= 1.3 updates it)."""
    errs = []
    if update.get("Name") and update["Name"] != current["Name"]:
        errs.append("volume name cannot be updated")
    if update.get("ExternalID") and update["ExternalID"] != current["ExternalID"]:
        errs.append("volume external ID cannot be updated")
    if update.get("PluginID") != current["PluginID"]:
        errs.append("volume plugin ID cannot be updated")
    if update.get("CloneID") and update["CloneID"] != current["CloneID"]:
        errs.append("volume clone ID cannot be updated")
    if update.get("SnapshotID") and update["SnapshotID"] != current["SnapshotID"]:
        errs.append("volume snapshot ID cannot be updated")
    return errs
