"""HTTP front end (aiohttp): routing of Kubernetes REST paths, discovery, list/get, create/update/delete; watch
streams and followed logs in streams.py."""

from __future__ import annotations

import asyncio
import hmac
import time
from typing import Any
from urllib.parse import unquote

import yaml
from aiohttp import web

from podtax_kubesim import openapi, paging, tables
from podtax_kubesim import resources as R
from podtax_kubesim.api import Api
from podtax_kubesim.faultanswers import failed_create, forbidden, namespace_of
from podtax_kubesim.faults import Faults
from podtax_kubesim.logs import Logs
from podtax_kubesim.metrics import CONTENT_TYPE, ApiMetrics, RequestInfo, request_info
from podtax_kubesim.resources import Resource
from podtax_kubesim.selectors import matcher
from podtax_kubesim.store import Store
from podtax_kubesim.streams import JSON, Streams
from podtax_kubesim.util import KUBE_VERSION, SIM_VERSION, ApiError, Obj, dumps, loads, not_found

BINDINGS = Resource("bindings", "Binding", "", "v1", True)
PUBLIC = ("healthz", "readyz", "livez", "version")  # open to anonymous clients, as in a real apiserver


def version_info() -> Obj:
    major, minor, _ = KUBE_VERSION.removeprefix("v").split(".")
    return {"major": major, "minor": minor, "gitVersion": SIM_VERSION, "gitCommit": "simulated",
            "gitTreeState": "clean", "buildDate": "1970-01-01T00:00:00Z", "goVersion": "none (python emulator)",
            "compiler": "python", "platform": "linux/amd64"}


def reply(obj: Any, code: int = 200) -> web.Response:
    return web.Response(body=obj if isinstance(obj, bytes) else dumps(obj), status=code, content_type=JSON)


def warned(response: web.Response, warning: str | None) -> web.Response:
    """Add a `Warning: 299` header (kubectl prints it) for fieldValidation=Warn findings."""
    if warning:
        text = warning.replace("\\", "\\\\").replace('"', '\\"')
        response.headers["Warning"] = f'299 - "{text}"'
    return response


def error(exc: ApiError) -> web.Response:
    response = reply(exc.to_status(), exc.code)
    after = (exc.details or {}).get("retryAfterSeconds")
    if after:  # as apimachinery's ErrorNegotiated: a Status that says when to retry says it in the header too
        response.headers["Retry-After"] = str(after)
    return response


class Server(Streams):
    def __init__(self, store: Store, api: Api, logs: Logs, bookmark_interval: float = 5.0, token: str = "",
                 faults: Faults | None = None) -> None:
        self.store, self.api, self.logs = store, api, logs
        self.faults = faults or Faults()
        self._drops = list(self.faults.drop_watches)  # fault dropWatches entries not yet used (each drops once)
        self._watch_down: dict[str, float] = {}  # plural -> until when (monotonic) its watches are refused
        self._sent: dict[int, int] = {}  # id(store watcher) -> events sent, while a dropWatches entry waits
        self._failed: dict[int, int] = {}  # id(failCreates entry) -> creates it failed
        self.token = token  # when set, every request but PUBLIC needs "Authorization: Bearer <token>"
        self.bookmark_interval = bookmark_interval
        self.metrics = ApiMetrics()
        self._watching: dict[int, bool] = {}  # id(request) of watches already counted (when they opened)
        self.stopping = asyncio.Event()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def authorized(self, request: web.Request) -> bool:
        if not self.token or request.path.strip("/").split("/")[0] in PUBLIC:
            return True
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if not self.authorized(request):
            return error(ApiError(401, "Unauthorized", "Unauthorized"))
        started = time.monotonic()
        info = request_info(request.method, request.path, request.query, request.headers.get("Content-Type", ""))
        try:
            self._forbid(info, request.path)
            response = await self._route(request)
        except ApiError as exc:
            response = error(exc)
        except (ValueError, TypeError, KeyError) as exc:
            response = error(ApiError(400, "BadRequest", f"bad request: {exc}"))
        self.metrics.observe(info, response.status, time.monotonic() - started, self._watching.pop(id(request), False))
        return response

    async def _route(self, request: web.Request) -> web.StreamResponse:
        parts = [unquote(p) for p in request.path.strip("/").split("/") if p]
        if not parts:
            return reply({"paths": ["/api", "/api/v1", "/apis", "/version", "/healthz"]})
        head = parts[0]
        if head == "metrics" and len(parts) == 1:
            return web.Response(body=self.metrics.text(), headers={"Content-Type": CONTENT_TYPE})
        if head in ("healthz", "readyz", "livez"):
            return web.Response(text="ok")
        if head == "version":
            return reply(version_info())
        if head == "openapi":
            return reply(openapi.serve(parts[1:]))
        if head == "api":
            if len(parts) == 1:
                host = request.host
                return reply({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs":
                              [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]})
            return await self._resource(request, "", parts[1], parts[2:])
        if head == "apis":
            if len(parts) == 1:
                return reply(R.group_list())
            if len(parts) == 2:
                if parts[1] not in R.GROUPS:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                gvs = [{"groupVersion": f"{parts[1]}/{v}", "version": v} for v in R.GROUPS[parts[1]]]
                return reply({"kind": "APIGroup", "apiVersion": "v1", "name": parts[1], "versions": gvs,
                              "preferredVersion": gvs[0]})
            return await self._resource(request, parts[1], parts[2], parts[3:])
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    async def _resource(self, request: web.Request, group: str, version: str, rest: list[str]) -> web.StreamResponse:
        if (group and version not in R.GROUPS.get(group, [])) or (not group and version != "v1"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            listing = R.discovery_list(group, version)
            if not group:
                listing["resources"].append({"name": "bindings", "singularName": "binding", "namespaced": True,
                                             "kind": "Binding", "verbs": ["create"]})
            return reply(listing)
        watch = request.query.get("watch") in ("true", "1")
        if rest[0] == "watch":
            watch, rest = True, rest[1:]
        ns: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (R.find(group, version, rest[2]) or rest[2] == "bindings"):
            ns, rest = rest[1], rest[2:]
        plural, name, sub = rest[0], (rest[1] if len(rest) > 1 else ""), (rest[2] if len(rest) > 2 else "")
        if plural == "bindings" and not group and ns is not None and request.method == "POST":
            body = await self._body(request)
            return reply(self.bind(ns, (body.get("metadata") or {}).get("name", ""), body), 201)
        res = R.find(group, version, plural)
        if res is None or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if res.namespaced and name and ns is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not res.namespaced and ns is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if sub and sub not in res.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        method = request.method
        if method == "GET":
            if sub == "log":
                return await self._log(request, ns or "", name)
            if watch:
                paging.validate(request.query, watch=True)
                return await self._watch(request, res, ns, name)
            if name:
                return self._get(request, res, ns or "", name)
            if res.plural in self.faults.hang_lists:  # fault hangLists (faults.py)
                await self.stopping.wait()
                raise ApiError(503, "ServiceUnavailable", f"the emulator stopped while holding a list of "
                               f"{res.plural} (podtax kubesim fault)")
            return self._list(request, res, ns)
        if method == "POST":
            body = await self._body(request)
            if sub == "binding":
                return reply(self.bind(ns or "", name, body), 201)
            if sub == "eviction":
                self.api.delete(res, ns or "", name, body.get("deleteOptions") or {})
                return reply({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                              "code": 201}, 201)
            if name:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested "
                               "resource")
            await self._hang("create", res, (body.get("metadata") or {}).get("name") or "")
            stored = self._fail(res, ns, (body.get("metadata") or {}).get("name") or "")
            warning = openapi.check_fields(res, body, request.query.get("fieldValidation", ""))
            created = self.api.out(res, self.api.create(res, ns or "", body))
            if stored is not None:
                raise stored
            return warned(reply(created, 201), warning)
        if method == "PUT":
            body = await self._body(request)
            warning = openapi.check_fields(res, body, request.query.get("fieldValidation", "")) if not sub else None
            return warned(reply(self.api.out(res, self.api.replace(res, ns or "", name, body, sub))), warning)
        if method == "PATCH":
            body = await self._body(request, whole=False)
            ctype = request.headers.get("Content-Type", "application/merge-patch+json")
            warning = openapi.check_fields(res, body, request.query.get("fieldValidation", "")) \
                if not sub and isinstance(body, dict) else None
            return warned(reply(self.api.out(res, self.api.patch(res, ns or "", name, body, ctype, sub))), warning)
        if method == "DELETE":
            options = await self._body(request, optional=True)
            for key in ("gracePeriodSeconds",):
                if key in request.query:
                    options[key] = int(request.query[key])
            if "propagationPolicy" in request.query:
                options["propagationPolicy"] = request.query["propagationPolicy"]
            if name:
                await self._hang("delete", res, name)
                stored = self._fail(res, ns, name, "delete")
                deleted = self.api.delete(res, ns or "", name, options)
                if stored is not None:
                    raise stored
                return reply(deleted)
            return self._delete_collection(request, res, ns, options)
        raise ApiError(405, "MethodNotAllowed", f"method {method} is not allowed")

    async def _hang(self, op: str, res: Resource, name: str) -> None:
        """Fault hangCreates / hangDeletes (faults.py): hold the request unanswered until the emulator stops."""
        if self.faults.hangs(op, res.plural, name):
            await self.stopping.wait()
            raise ApiError(503, "ServiceUnavailable", f"the emulator stopped while holding the {op} of {name} "
                           "(podtax kubesim fault)")

    def _forbid(self, info: RequestInfo | None, path: str) -> None:
        """Fault forbid (faults.py): refuse the request as RBAC does when its user has no role for the verb."""
        if info is None or not self.faults.forbid:
            return
        ns = namespace_of(path) if info.resource != "namespaces" else ""
        if (refusal := forbidden(self.faults, info, ns)) is not None:
            raise refusal

    def bind(self, ns: str, name: str, body: Any) -> Obj:
        """A pod's binding as the API server answers it, fault failCreates 'bindings/<pod name ending>' (faults.py)
        included; the built-in default-scheduler binds through here too, as kube-scheduler's DefaultBinder POSTs its
        bindings to the API server."""
        stored = self._fail(BINDINGS, ns, name)
        bound = self.api.bind(ns, name, body)
        if stored is not None:
            raise stored
        return bound

    def _fail(self, res: Resource, namespace: str | None, name: str, op: str = "create") -> ApiError | None:
        """Fault failCreates / failDeletes (faults.py): answer a matching create or delete with the entry's status,
        doing nothing; an entry `stored` returns that answer instead, for the caller to give once it has done it."""
        entry = self.faults.failing(res.plural, name, op, lambda e: self._failed.get(id(e), 0))
        if entry is None:
            return None
        self._failed[id(entry)] = self._failed.get(id(entry), 0) + 1
        answer = failed_create(entry, res.plural, namespace, name, op)
        if entry.stored:
            return answer
        raise answer

    @staticmethod
    async def _body(request: web.Request, optional: bool = False, whole: bool = True) -> Any:
        """The request's JSON or YAML body; an object unless `whole` is False (a JSON patch is a list). A body of
        another kind, or YAML that does not parse, is a 400, as the API server answers: it was a 500 with a
        traceback in the log ('list' object has no attribute 'get'; yaml's ScannerError)."""
        raw = await request.read()
        if not raw:
            if optional:
                return {}
            raise ApiError(400, "BadRequest", "the request body is empty")
        kind = "YAML" if "yaml" in request.headers.get("Content-Type", "") else "JSON"
        try:
            body = yaml.safe_load(raw) if kind == "YAML" else loads(raw)  # `[]`, `0`, `false`: 400, not {} (r4)
        except (ValueError, yaml.YAMLError) as exc:
            raise ApiError(400, "BadRequest", f"the request body is not valid {kind}: {' '.join(str(exc).split())}") \
                from exc
        if whole and not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the request body must be a JSON object")
        return body

    @staticmethod
    def _wants_table(request: web.Request) -> bool:
        return "as=Table" in request.headers.get("Accept", "")

    def _get(self, request: web.Request, res: Resource, ns: str, name: str) -> web.Response:
        paging.check_cached_version(request.query.get("resourceVersion", ""))  # a version: the watch cache serves it
        key_ns = ns if res.namespaced else ""
        if self._wants_table(request) or res.storage:
            obj = self.store.get(res.store_key, key_ns, name)
            if obj is None:
                raise not_found(res.plural, name, res.group)
            if res.storage:
                obj = self.api.out(res, obj)
            if self._wants_table(request):
                return reply(tables.table(res.kind, [obj], str(self.store.rv),
                                          request.query.get("includeObject", "Metadata")))
            return reply(obj)
        raw = self.store.get_raw(res.store_key, key_ns, name)
        if raw is None:
            raise not_found(res.plural, name, res.group)
        return reply(raw)

    def _list(self, request: web.Request, res: Resource, ns: str | None) -> web.Response:
        paging.validate(request.query)
        match = matcher(request.query.get("labelSelector"), request.query.get("fieldSelector"))
        paged = paging.params(request.query)
        if paged is not None:  # limit / continue: one page of a snapshot (paging.py), etcd's path: 400 if malformed
            paging.check_version(request.query)
            view = (lambda o: self.api.out(res, o)) if res.storage else None
            page = paging.read(self.store, res.store_key, ns, paged, match, view)
            if self._wants_table(request):
                table = tables.table(res.kind, [o for o, _ in page.rows], str(page.rv),
                                     request.query.get("includeObject", "Metadata"))
                table["metadata"] = paging.list_meta(page)
                return reply(table)
            return reply(paging.body(f"{res.kind}List", res.api_version, page))
        paging.check_cached_version(request.query.get("resourceVersion", ""))  # the watch cache's path: 500
        paging.check_cached(self.store, request.query)
        rv = str(self.store.rv)
        if self._wants_table(request) or res.storage:
            objs = [self.api.out(res, o) for _, o in self.store.listed(res.store_key, ns)]
            objs = [o for o in objs if match is None or match(o)]
            if self._wants_table(request):
                return reply(tables.table(res.kind, objs, rv, request.query.get("includeObject", "Metadata")))
            return reply({"kind": f"{res.kind}List", "apiVersion": res.api_version,
                          "metadata": {"resourceVersion": rv}, "items": objs})
        raws = self.store.raw_items(res.store_key, ns, match)
        head = dumps({"kind": f"{res.kind}List", "apiVersion": res.api_version,
                      "metadata": {"resourceVersion": rv}})
        return reply(head[:-1] + b',"items":[' + b",".join(raws) + b"]}")

    def _delete_collection(self, request: web.Request, res: Resource, ns: str | None, options: Obj) -> web.Response:
        match = matcher(request.query.get("labelSelector"), request.query.get("fieldSelector"))
        victims = [o["metadata"]["name"] for _, o in self.store.listed(res.store_key, ns) if match is None or match(o)]
        items = []
        for name in victims:
            try:
                items.append(self.api.delete(res, ns or "", name, dict(options)))
            except ApiError:
                continue
        return reply({"kind": f"{res.kind}List", "apiVersion": res.api_version,
                      "metadata": {"resourceVersion": str(self.store.rv)}, "items": items})
