"""The long-lived answers of kubesim's HTTP front end: watch streams (bookmarks, fault dropWatches) and followed
pod logs. A mixin of server.Server, whose state (store, api, logs, metrics, faults, stopping) they read."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from aiohttp import web

from podtax_kubesim import paging
from podtax_kubesim import resources as R
from podtax_kubesim.api import Api
from podtax_kubesim.faults import DropWatch
from podtax_kubesim.logs import Logs
from podtax_kubesim.metrics import ApiMetrics, request_info
from podtax_kubesim.resources import Resource
from podtax_kubesim.selectors import matcher
from podtax_kubesim.store import Store
from podtax_kubesim.util import ApiError, dumps, not_found

JSON = "application/json"


class Streams:
    """Watches and followed logs (server.Server sets these attributes)."""

    store: Store
    api: Api
    logs: Logs
    metrics: ApiMetrics
    bookmark_interval: float
    stopping: asyncio.Event
    _drops: list[DropWatch]
    _watch_down: dict[str, float]
    _sent: dict[int, int]
    _watching: dict[int, bool]

    async def _watch(self, request: web.Request, res: Resource, ns: str | None, name: str) -> web.StreamResponse:
        q = request.query
        fields = q.get("fieldSelector") or ""
        if name:
            fields = f"metadata.name={name}" + (f",{fields}" if fields else "")
        match = matcher(q.get("labelSelector"), fields)
        rv_text = q.get("resourceVersion") or ""
        paging.check_cached_version(rv_text)
        if time.monotonic() < self._watch_down.get(res.plural, 0.0):
            raise ApiError(503, "ServiceUnavailable", f"watches of {res.plural} are down (podtax kubesim fault "
                           "dropWatches)")
        drop = next((d for d in self._drops if d.resource == res.plural), None)
        initial = q.get("sendInitialEvents") == "true"
        since = None if initial or rv_text in ("", "0") else int(rv_text)
        bookmarks = q.get("allowWatchBookmarks") == "true"
        timeout = float(q.get("timeoutSeconds") or 1800)
        resp = web.StreamResponse(status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        info = request_info(request.method, request.path, request.query)
        self._watching[id(request)] = True
        self.metrics.watch_opened(info)
        view = self.api.out if res.storage else None
        try:
            watcher = self.store.watch(res.store_key, ns, match, since,
                                       (lambda o: view(res, o)) if view else None)
        except ApiError as exc:
            await resp.write(dumps({"type": "ERROR", "object": exc.to_status()}) + b"\n")
            return resp
        owner = R.BY_KEY.get(res.store_key, res)
        if initial and bookmarks:
            watcher.bookmark(owner.kind, owner.api_version, {"k8s.io/initial-events-end": "true"})
        deadline = time.monotonic() + timeout
        next_bookmark = time.monotonic() + self.bookmark_interval
        self.metrics.watch_streaming(info, 1)
        try:
            while not watcher.closed and not self.stopping.is_set():
                now_t = time.monotonic()
                if now_t >= deadline:
                    break
                if bookmarks and now_t >= next_bookmark:
                    watcher.bookmark(owner.kind, owner.api_version)
                    next_bookmark = now_t + self.bookmark_interval
                if not watcher.buf:
                    wait = min(deadline, next_bookmark if bookmarks else deadline) - now_t
                    try:
                        await asyncio.wait_for(watcher.wake.wait(), timeout=max(wait, 0.001))
                    except TimeoutError:
                        continue
                data, dropped = self._drain(watcher, drop)
                if data:
                    await resp.write(data)
                if dropped and drop is not None and drop.silent:  # open, and nothing more: a half-open connection
                    await self._silent(request, deadline)
                    break
                if dropped:
                    break
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            watcher.close()
            self.metrics.watch_streaming(info, -1)
        return resp

    async def _silent(self, request: web.Request, deadline: float) -> None:
        """Fault dropWatches' `silent`: hold the stream open, sending nothing, until its deadline, the client hangs up
        or kubesim stops."""
        while not self.stopping.is_set() and time.monotonic() < deadline \
                and request.transport is not None and not request.transport.is_closing():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=max(0.001, min(1.0, deadline - time.monotonic())))

    def _drain(self, watcher: Any, drop: DropWatch | None) -> tuple[bytes, bool]:
        """The stream's next bytes, and whether fault dropWatches (`drop`) closes it after them: once its stream
        has delivered `after_events` events, the rest is not sent and the resource's watches are refused for
        `down_s` (the client sees a dropped watch, then an API server that is back)."""
        if drop is None or drop not in self._drops:
            return watcher.drain(), False
        lines, out = list(watcher.buf), []
        watcher.drain()
        for line in lines:
            out.append(line)
            if b'"BOOKMARK"' not in line[:32]:
                self._sent[id(watcher)] = self._sent.get(id(watcher), 0) + 1
            if self._sent.get(id(watcher), 0) >= drop.after_events:
                self._drops.remove(drop)
                self._sent.pop(id(watcher), None)
                self._watch_down[drop.resource] = time.monotonic() + drop.down_s
                return b"".join(out), True
        return b"".join(out), False

    async def _log(self, request: web.Request, ns: str, name: str) -> web.StreamResponse:
        pod = self.store.get(R.PODS, ns, name)
        if pod is None:
            raise not_found("pods", name)
        names = [c["name"] for c in pod["spec"].get("initContainers") or []] + \
                [c["name"] for c in pod["spec"]["containers"]]
        container = request.query.get("container") or ""
        if not container:
            if len(pod["spec"]["containers"]) != 1:
                raise ApiError(400, "BadRequest", f"a container name must be specified for pod {name}, "
                               f"choose one of: [{' '.join(names)}]")
            container = pod["spec"]["containers"][0]["name"]
        if container not in names:
            raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
        if request.query.get("previous") == "true":
            raise ApiError(400, "BadRequest", f'previous terminated container "{container}" in pod "{name}" not found')
        buf = self.logs.get(pod["metadata"]["uid"], container)
        if buf is None:
            raise ApiError(400, "BadRequest", f'container "{container}" in pod "{name}" is waiting to start: '
                           "ContainerCreating")
        tail = int(request.query["tailLines"]) if "tailLines" in request.query else None
        limit = int(request.query["limitBytes"]) if "limitBytes" in request.query else None
        text, end = buf.text(tail, limit), buf.truncated + len(buf.data)
        if request.query.get("follow") != "true":
            return web.Response(body=text, content_type="text/plain")
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        await resp.write(text)
        try:
            async for chunk in buf.follow(end):
                await resp.write(chunk)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return resp
