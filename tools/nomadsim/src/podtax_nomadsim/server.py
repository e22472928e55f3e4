"""HTTP front end (aiohttp) of the simulated Nomad API: the routes of command/agent/csi_endpoint.go,
status/agent stubs, ACL tokens, `?namespace=`/`?region=`, blocking queries, the X-Nomad-* headers and
a Prometheus /metrics of the requests served."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from podtax_nomadsim import SIMULATED_HEADER
from podtax_nomadsim.cluster import FAIL_TEXT
from podtax_nomadsim.state import NomadError, State

SIM_VERSION = "1.9.0"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus text format 0.0.4
MAX_QUERY_TIME = 300.0  # Nomad's maxQueryTime and defaultQueryTime
INVALID_METHOD = "Invalid method"
NOT_FOUND = "Resource not found"
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_STRINGS = ("ID", "Name", "Namespace", "PluginID", "ExternalID", "CloneID", "SnapshotID")
_INTS = ("RequestedCapacityMin", "RequestedCapacityMax")
_MAPS = ("Parameters", "Secrets", "Context")


def parse_duration(text: str) -> float | None:
    """Go's time.ParseDuration for non-negative values; None when invalid."""
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(text):
        m = _DURATION.match(text, pos)
        if m is None:
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return total if text else None


def _go_type(value: Any) -> str:
    return {bool: "bool", str: "string", list: "array", dict: "object"}.get(type(value), "number")


def decode_volumes(raw: bytes) -> list[dict]:
    """The {"Volumes": [...]} body of register/create, type-checked like Go's decoder (400 on error)."""
    if not raw:  # Go's server gives a request without a body http.NoBody: decodeBody's own words (http.go)
        raise NomadError("Request body is empty", 400)
    if not raw.strip():
        raise NomadError("EOF", 400)
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise NomadError(f"invalid JSON in request body: {exc}", 400) from exc
    if not isinstance(body, dict):
        raise NomadError(f"json: cannot unmarshal {_go_type(body)} into Go value of type "
                         "structs.CSIVolumeCreateRequest", 400)
    vols = body.get("Volumes") or []
    if not isinstance(vols, list):
        raise NomadError(f"json: cannot unmarshal {_go_type(vols)} into Go struct field .Volumes of type "
                         "[]*structs.CSIVolume", 400)

    def bad(field: str, value: Any, gotype: str) -> NomadError:
        return NomadError(f"json: cannot unmarshal {_go_type(value)} into Go struct field "
                          f"CSIVolume.Volumes.{field} of type {gotype}", 400)

    for vol in vols:
        if not isinstance(vol, dict):
            raise NomadError(f"json: cannot unmarshal {_go_type(vol)} into Go struct field .Volumes of type "
                             "structs.CSIVolume", 400)
        for key in _STRINGS:
            if vol.get(key) is not None and not isinstance(vol[key], str):
                raise bad(key, vol[key], "string")
        for key in _INTS:
            value = vol.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise bad(key, value, "int64")
        for key in _MAPS:
            value = vol.get(key)
            if value is not None and (not isinstance(value, dict) or not all(isinstance(v, str)
                                                                               for v in value.values())):
                raise bad(key, value, "map[string]string")
        caps = vol.get("RequestedCapabilities")
        if caps is not None and (not isinstance(caps, list) or not all(
                isinstance(c, dict) and all(isinstance(c.get(k, ""), str) for k in ("AccessMode", "AttachmentMode"))
                for c in caps)):
            raise bad("RequestedCapabilities", caps, "[]*structs.CSIVolumeCapability")
    return vols


class Server:
    def __init__(self, state: State, acl_token: str | None = None, read_token: str | None = None) -> None:
        self.state = state
        self.acl_token = acl_token
        self.read_token = read_token  # a token whose policy reads only: a write answers 403 Permission denied
        self.region = state.cluster["region"]
        self.fails: list[dict] = state.cluster.get("fails") or []  # fault failRequests (cluster.py)
        self.failed: dict[int, int] = {}  # entry index -> requests it answered
        self.registry = CollectorRegistry()
        self.requests = Counter("nomad_http_requests", "HTTP requests served by the SIMULATED Nomad API "
                                "(podtax nomadsim), by method, route template and status code",
                                ["method", "path_template", "code"], registry=self.registry)
        self.durations = Histogram("nomad_http_request_duration_seconds", "Time to answer HTTP requests "
                                   "(podtax nomadsim, SIMULATED)", ["method", "path_template"],
                                   registry=self.registry,
                                   buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    # --- plumbing -------------------------------------------------------------------------
    def _headers(self, index: int | None = None) -> dict[str, str]:
        return {"X-Nomad-Index": str(max(index if index is not None else self.state.index, 1)),
                "X-Nomad-LastContact": "0", "X-Nomad-KnownLeader": "true", SIMULATED_HEADER: "true"}

    def _json(self, obj: Any, index: int | None = None) -> web.Response:
        body = b"" if obj is None else json.dumps(obj).encode()
        return web.Response(body=body, status=200, content_type="application/json", headers=self._headers(index))

    def _text(self, message: str, code: int, index: int | None = None) -> web.Response:
        """An error in Nomad's words. Its X-Nomad-* headers only with `index`: Nomad sets them (setMeta) after the RPC
        answered, so a read that found nothing (404) has them, a refused or failed request (403, 500 ...) not."""
        headers = self._headers(index) if index is not None else {SIMULATED_HEADER: "true"}
        return web.Response(text=message, status=code, content_type="text/plain", headers=headers)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        template, handler = self._route(request.path)
        if template in ("/metrics", "/v1/metrics"):
            return web.Response(body=generate_latest(self.registry), headers={
                "Content-Type": METRICS_CONTENT_TYPE, SIMULATED_HEADER: "true"})
        try:
            if template not in ("/v1/status/leader", "/v1/status/peers"):
                self._authorize(request)
            self._check_region(request)
            self._fail(f"{request.method} {template}")
            response = await handler(request)
        except NomadError as exc:
            response = self._text(exc.message, exc.code)
        self.requests.labels(request.method, template, str(response.status)).inc()
        self.durations.labels(request.method, template).observe(time.monotonic() - started)
        return response

    def _route(self, path: str) -> tuple[str, Callable[[web.Request], Awaitable[web.Response]]]:
        if path.startswith("/v1/volume/csi/"):
            tokens = path[len("/v1/volume/csi/"):].split("/")
            if len(tokens) == 2 and tokens[1] in ("create", "delete", "detach"):
                return f"/v1/volume/csi/:id/{tokens[1]}", self.volume_specific
            return "/v1/volume/csi/:id", self.volume_specific
        if path.startswith("/v1/plugin/csi/"):
            return "/v1/plugin/csi/:id", self.plugin_specific
        if path.startswith("/v1/namespace/"):
            return "/v1/namespace/:name", self.namespace_specific
        routes = {"/v1/volumes": self.volumes, "/v1/plugins": self.plugins, "/v1/status/leader": self.leader,
                  "/v1/status/peers": self.peers, "/v1/agent/self": self.agent_self, "/v1/namespaces": self.namespaces,
                  "/metrics": self.not_found, "/v1/metrics": self.not_found}
        if path in routes:
            return path, routes[path]
        return "other", self.not_found

    def _authorize(self, request: web.Request) -> None:
        if self.acl_token is None:
            return
        token = request.headers.get("X-Nomad-Token", "")
        if not token:
            scheme, _, value = request.headers.get("Authorization", "").partition(" ")
            if scheme.lower() == "bearer":
                token = value.strip()
        if not token:
            raise NomadError("Permission denied", 403)  # the anonymous token has no policy here
        if token == self.read_token and request.method != "GET":
            raise NomadError("Permission denied", 403)  # no csi-write-volume in its policy
        if token not in (self.acl_token, self.read_token):
            raise NomadError("ACL token not found", 403)

    def _fail(self, request: str) -> None:
        """Fault failRequests: answer the first `times` requests of an entry with its status, in Nomad's words."""
        for i, entry in enumerate(self.fails):
            if entry["request"] == request and (not entry["times"] or self.failed.get(i, 0) < entry["times"]):
                self.failed[i] = self.failed.get(i, 0) + 1
                raise NomadError(FAIL_TEXT.get(entry["status"], "podtax nomadsim fault failRequests"),
                                 entry["status"])

    def _check_region(self, request: web.Request) -> None:
        region = request.query.get("region")
        if region and region != self.region:
            raise NomadError("No path to region", 500)

    @staticmethod
    def _namespace(request: web.Request) -> str:
        return request.query.get("namespace") or "default"

    @staticmethod
    def _blocking(request: web.Request) -> tuple[int, float]:
        wait, index = request.query.get("wait", ""), request.query.get("index", "")
        seconds = MAX_QUERY_TIME
        if wait:
            parsed = parse_duration(wait)
            if parsed is None:
                raise NomadError("Invalid wait time", 400)
            seconds = min(parsed, MAX_QUERY_TIME) if parsed > 0 else MAX_QUERY_TIME
        min_index = 0
        if index:
            if not index.isdigit():
                raise NomadError("Invalid index", 400)
            min_index = int(index)
        return min_index, seconds

    async def _read(self, request: web.Request, query: Callable[[], tuple[Any, int]]) -> tuple[Any, int]:
        min_index, wait = self._blocking(request)
        return await self.state.blocking(query, min_index, wait)

    # --- handlers ----------------------------------------------------------------------------
    async def not_found(self, request: web.Request) -> web.Response:
        raise NomadError(NOT_FOUND, 404)

    async def volumes(self, request: web.Request) -> web.Response:
        if request.method in ("PUT", "POST"):
            return await self._register(request)
        if request.method != "GET":
            raise NomadError(INVALID_METHOD, 405)
        kind = request.query.get("type")
        if kind is None or kind == "host":
            return self._json([])
        if kind != "csi":
            raise NomadError(NOT_FOUND, 404)
        q, ns = request.query, self._namespace(request)
        stubs, index = await self._read(request, lambda: self.state.volume_stubs(
            ns, q.get("prefix", ""), q.get("plugin_id", ""), q.get("node_id", "")))
        return self._json(stubs, index)

    async def volume_specific(self, request: web.Request) -> web.Response:
        tokens = request.path[len("/v1/volume/csi/"):].split("/")
        vol_id, method, ns = tokens[0], request.method, self._namespace(request)
        if len(tokens) == 1:
            if method == "GET":
                vol, index = await self._read(request, lambda: self.state.volume(ns, vol_id))
                if vol is None:
                    return self._text("volume not found", 404, index)
                return self._json(vol, index)
            if method == "PUT":
                return await self._register(request)
            if method == "DELETE":
                raw = request.query.get("force", "")
                force = parse_bool(raw) if raw else False
                if force is None:
                    raise NomadError("invalid force value", 400)
                return self._json(None, self.state.deregister(ns, vol_id, force))
            raise NomadError(INVALID_METHOD, 405)
        if len(tokens) == 2:
            if method == "PUT" and tokens[1] == "create":
                vols, index = await self.state.create(ns, decode_volumes(await request.read()))
                return self._json({"Volumes": vols, "Warnings": "", **self._query_meta(index)}, index)
            if method == "DELETE" and tokens[1] == "delete":
                return self._json(None, await self.state.delete(ns, vol_id))
            if method == "DELETE" and tokens[1] == "detach":
                if not request.query.get("node"):
                    raise NomadError("detach requires node ID", 400)
                raise NomadError("podtax nomadsim: detach is not simulated", 501)
            if method not in ("PUT", "DELETE"):
                raise NomadError(INVALID_METHOD, 405)
        raise NomadError(NOT_FOUND, 404)

    async def _register(self, request: web.Request) -> web.Response:
        _, index = self.state.register(self._namespace(request), decode_volumes(await request.read()))
        return self._json(None, index)  # csiVolumeRegister returns nil, nil: 200, an empty body, the index headers

    @staticmethod
    def _query_meta(index: int) -> dict[str, Any]:
        return {"Index": index, "LastContact": 0, "KnownLeader": True, "NextToken": ""}

    async def plugins(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            raise NomadError(INVALID_METHOD, 405)
        kind = request.query.get("type")
        if kind is None:
            return self._json([])
        if kind != "csi":
            return self._json(None)
        stubs, index = await self._read(request, self.state.plugin_stubs)
        return self._json(stubs, index)

    async def plugin_specific(self, request: web.Request) -> web.Response:
        if request.method != "GET":
            raise NomadError(INVALID_METHOD, 405)
        tokens = request.path[len("/v1/plugin/csi/"):].split("/")
        if len(tokens) > 2:
            raise NomadError(NOT_FOUND, 404)
        plugin, index = await self._read(request, lambda: self.state.plugin(tokens[0]))
        if plugin is None:
            return self._text("plugin not found", 404, index)
        return self._json(plugin, index)

    def _namespace_obj(self, name: str) -> dict[str, Any]:
        return {"Name": name, "Description": "Default shared namespace" if name == "default" else "", "Quota": "",
                "Meta": None, "Capabilities": None, "NodePoolConfiguration": None,
                "CreateIndex": 1, "ModifyIndex": 1}

    async def namespaces(self, request: web.Request) -> web.Response:
        """GET /v1/namespaces (command/agent/namespace_endpoint.go); namespaces are the cluster file's."""
        if request.method != "GET":
            raise NomadError(INVALID_METHOD, 405)
        return self._json([self._namespace_obj(n) for n in sorted(self.state.namespaces)], 1)

    async def namespace_specific(self, request: web.Request) -> web.Response:
        """GET /v1/namespace/:name: the namespace, or 404 `Namespace not found` (with the index headers, as Nomad
        sets them before it looks); writes are not simulated."""
        name = request.path[len("/v1/namespace/"):]
        if not name:
            raise NomadError("Missing Namespace Name", 400)
        if request.method in ("PUT", "POST", "DELETE"):
            raise NomadError("podtax nomadsim: namespace writes are not simulated (namespaces are the cluster "
                             "file's)", 501)
        if request.method != "GET":
            raise NomadError(INVALID_METHOD, 405)
        if name not in self.state.namespaces:
            return self._text("Namespace not found", 404, 1)
        return self._json(self._namespace_obj(name), 1)

    async def leader(self, request: web.Request) -> web.Response:
        return self._json(f"{request.url.host or '127.0.0.1'}:4647")

    async def peers(self, request: web.Request) -> web.Response:
        return self._json([f"{request.url.host or '127.0.0.1'}:4647"])

    async def agent_self(self, request: web.Request) -> web.Response:
        cluster = self.state.cluster
        return self._json({
            "config": {"Region": cluster["region"], "Datacenter": cluster["datacenter"], "NodeName": "nomadsim",
                       "Version": {"Version": SIM_VERSION, "VersionMetadata": "podtax-nomadsim",
                                   "VersionPrerelease": ""},
                       "ACL": {"Enabled": self.acl_token is not None}, "Simulated": True},
            "member": {"Name": "nomadsim.global", "Addr": "127.0.0.1", "Port": 4648, "Status": "alive",
                       "Tags": {"region": cluster["region"], "dc": cluster["datacenter"], "build": SIM_VERSION,
                                "role": "nomad", "simulated": "true"}},
            "stats": {"nomad": {"leader": "true", "known_regions": "1"}}})


def parse_bool(text: str) -> bool | None:
    """Go's strconv.ParseBool."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None
